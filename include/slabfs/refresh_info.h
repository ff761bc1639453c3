// What Container::Refresh found: RefreshInfo.
#ifndef SLABFS_REFRESH_INFO_H_
#define SLABFS_REFRESH_INFO_H_

#include <cstdint>
#include <string>
#include <vector>

#include "slabfs/object.h"

namespace slabfs {

// What Container::Refresh found.
struct RefreshInfo {
  uint64_t generation = 0;  // the commit the container now reads
  bool changed = false;     // it is newer than the one read before
  // Objects that are new, or whose attributes, children (groups) or
  // contents and shape (datasets) changed; a group whose descendant changed
  // is listed too. Sorted.
  std::vector<ObjectId> changed_objects;
  // Objects that are gone. Sorted.
  std::vector<ObjectId> removed_objects;
  // Names of the commit read before that no longer lead to the same object
  // (removed, renamed, moved or replaced), for caches of names such as the
  // kernel's dentries.
  struct Name {
    ObjectId parent = 0;
    std::string name;
  };
  std::vector<Name> dropped_names;
};

}  // namespace slabfs

#endif  // SLABFS_REFRESH_INFO_H_
