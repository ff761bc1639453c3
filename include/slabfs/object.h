// Groups and datasets as objects: ids, kinds, names and what Stat and List
// tell of them.
#ifndef SLABFS_OBJECT_H_
#define SLABFS_OBJECT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "slabfs/status.h"

namespace slabfs {

// Names of groups, datasets and attributes are at most 255 bytes.
constexpr size_t kMaxNameBytes = 255;

// Checks a group, dataset or attribute name: non-empty, at most 255 bytes,
// no '/', no NUL, not "." or "..".
Status ValidateName(std::string_view name);

// Every group and dataset has an id that never changes while it exists
// (across renames and reopenings) and is never reused for another object.
// The root group's id is kRootId.
using ObjectId = uint64_t;
constexpr ObjectId kRootId = 1;

enum class ObjectKind : unsigned char { kGroup = 1, kDataset = 2 };

struct ObjectInfo {
  ObjectId id = 0;
  ObjectKind kind = ObjectKind::kGroup;
  uint64_t num_children = 0;  // groups
  uint64_t size_bytes = 0;    // datasets: elements * item size
  uint64_t stored_bytes = 0;  // datasets: bytes of chunk data stored
};

struct Entry {
  std::string name;
  ObjectId id = 0;
  ObjectKind kind = ObjectKind::kGroup;
};

}  // namespace slabfs

#endif  // SLABFS_OBJECT_H_
