#include "fusefs/views/view_table.h"

namespace slabfs::fusefs::views {

uint64_t ViewTable::Lookup(const ViewRef& ref) {
  std::lock_guard lock(mu_);
  const Key key{ref.dataset, ref.kind, ref.slice};
  auto it = by_key_.find(key);
  if (it != by_key_.end()) {
    ++by_ino_[it->second].lookups;
    return it->second;
  }
  const uint64_t ino = next_++;
  by_ino_[ino] = Slot{ref, 1};
  by_key_[key] = ino;
  return ino;
}

std::optional<ViewRef> ViewTable::Find(uint64_t ino) {
  std::lock_guard lock(mu_);
  auto it = by_ino_.find(ino);
  if (it == by_ino_.end()) return std::nullopt;
  return it->second.ref;
}

void ViewTable::Forget(uint64_t ino, uint64_t n) {
  std::lock_guard lock(mu_);
  auto it = by_ino_.find(ino);
  if (it == by_ino_.end()) return;
  if (it->second.lookups > n) {
    it->second.lookups -= n;
    return;
  }
  by_key_.erase(Key{it->second.ref.dataset, it->second.ref.kind, it->second.ref.slice});
  by_ino_.erase(it);
}

size_t ViewTable::size() {
  std::lock_guard lock(mu_);
  return by_ino_.size();
}

}  // namespace slabfs::fusefs::views
