// The inode numbers of views: far above any object id (which st_ino also
// is), handed out at lookup and taken back when the kernel forgets them.
// Thread-safe; its mutex is a leaf.
#ifndef SLABFS_FUSEFS_VIEWS_VIEW_TABLE_H_
#define SLABFS_FUSEFS_VIEWS_VIEW_TABLE_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>

#include "fusefs/views/view_name.h"
#include "slabfs/types.h"

namespace slabfs::fusefs::views {

inline constexpr uint64_t kFirstViewIno = uint64_t{1} << 62;

inline bool IsViewIno(uint64_t ino) { return ino >= kFirstViewIno; }

struct ViewRef {
  ObjectId dataset = 0;
  ViewKind kind = ViewKind::kRaw;
  std::optional<std::string> slice;
};

class ViewTable {
 public:
  // The inode of the view, counting one more kernel reference to it.
  uint64_t Lookup(const ViewRef& ref);
  std::optional<ViewRef> Find(uint64_t ino);
  // The kernel dropped n references.
  void Forget(uint64_t ino, uint64_t n);
  size_t size();

 private:
  using Key = std::tuple<ObjectId, ViewKind, std::optional<std::string>>;
  struct Slot {
    ViewRef ref;
    uint64_t lookups = 0;
  };
  std::mutex mu_;
  uint64_t next_ = kFirstViewIno;
  std::unordered_map<uint64_t, Slot> by_ino_;
  std::map<Key, uint64_t> by_key_;
};

}  // namespace slabfs::fusefs::views

#endif  // SLABFS_FUSEFS_VIEWS_VIEW_TABLE_H_
