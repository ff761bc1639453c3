#include "engine/fsck/extent_map.h"

#include <algorithm>

namespace slabfs::engine {

void ExtentMap::Claim(uint64_t addr, uint64_t len, const std::string& owner) {
  if (len == 0) return;
  auto [it, added] = owner_ids_.try_emplace(owner, static_cast<uint32_t>(owners_.size()));
  if (added) owners_.push_back(owner);
  claims_.push_back({addr, len, it->second});
}

void ExtentMap::Settle(uint64_t start, uint64_t end, const std::function<void(const Owned&, const Owned&)>& on_overlap,
                       const std::function<void(uint64_t addr, uint64_t len)>& on_gap) {
  std::sort(claims_.begin(), claims_.end(),
            [](const Entry& a, const Entry& b) { return a.addr != b.addr ? a.addr < b.addr : a.len > b.len; });
  uint64_t reached = start;  // every byte of [start, reached) is claimed
  const Entry* furthest = nullptr;
  for (const Entry& e : claims_) {
    const uint64_t e_end = e.addr + e.len;
    if (furthest && e.addr < reached) {
      on_overlap({furthest->addr, furthest->len, owners_[furthest->owner]}, {e.addr, e.len, owners_[e.owner]});
    } else if (e.addr > reached) {
      on_gap(reached, std::min(e.addr, end) - reached);
    }
    if (e_end > reached) {
      reached = e_end;
      furthest = &e;
    }
  }
  if (reached < end) on_gap(reached, end - reached);
}

}  // namespace slabfs::engine
