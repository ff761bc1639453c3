// Who claims which bytes of the container (slab fsck): every referenced
// extent and every free one is claimed once; Settle then reports the bytes
// claimed twice and the bytes no one claimed.
#ifndef SLABFS_ENGINE_FSCK_EXTENT_MAP_H_
#define SLABFS_ENGINE_FSCK_EXTENT_MAP_H_

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace slabfs::engine {

class ExtentMap {
 public:
  struct Owned {
    uint64_t addr = 0;
    uint64_t len = 0;
    const std::string& owner;
  };

  // Records that `owner` ("/a/b chunk", "free space") uses [addr, addr+len).
  // Owners are interned: millions of chunk claims share one name.
  void Claim(uint64_t addr, uint64_t len, const std::string& owner);

  // Sorts the claims and calls on_overlap for each claim that starts before
  // an earlier one ends (with the claim reaching furthest), and on_gap for
  // each maximal range of [start, end) that no claim covers.
  void Settle(uint64_t start, uint64_t end, const std::function<void(const Owned&, const Owned&)>& on_overlap,
              const std::function<void(uint64_t addr, uint64_t len)>& on_gap);

  size_t size() const { return claims_.size(); }

 private:
  struct Entry {
    uint64_t addr;
    uint64_t len;
    uint32_t owner;
  };
  std::vector<Entry> claims_;
  std::vector<std::string> owners_;
  std::unordered_map<std::string, uint32_t> owner_ids_;
};

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_FSCK_EXTENT_MAP_H_
