// A map from names to values kept two ways: in name order (for listing,
// group pages and the records a commit writes) and by a hash of the name
// (for lookups). A lookup in a std::map of 100,000 names walks about 17
// nodes, each a dependent cache miss once the tree no longer fits in the
// caches; the hash finds the entry in one slot probe and one node, so
// looking up the 100,000th child of a group costs about what looking up
// the 10th does (issue 21: per-operation cost flat as a group grows).
//
// The hash is open addressing (linear probing) over slots that hold the
// name's hash and an iterator into the ordered map, so a probe touches one
// slot and dereferences only the node whose hash matches. Iterators stay
// valid as the map's nodes never move (the class is movable, not
// copyable: a move keeps the nodes).
#ifndef SLABFS_ENGINE_UTIL_NAME_MAP_H_
#define SLABFS_ENGINE_UTIL_NAME_MAP_H_

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace slabfs::engine {

template <class V>
class NameMap {
 public:
  using Ordered = std::map<std::string, V, std::less<>>;
  using iterator = typename Ordered::iterator;
  using const_iterator = typename Ordered::const_iterator;

  NameMap() = default;
  NameMap(const NameMap&) = delete;
  NameMap& operator=(const NameMap&) = delete;
  NameMap(NameMap&&) noexcept = default;
  NameMap& operator=(NameMap&&) noexcept = default;

  iterator find(std::string_view name) {
    const size_t s = FindSlot(name, Hash(name));
    return s == kNone ? ordered_.end() : slots_[s].it;
  }
  const_iterator find(std::string_view name) const { return const_cast<NameMap*>(this)->find(name); }
  size_t count(std::string_view name) const { return contains(name) ? 1 : 0; }
  bool contains(std::string_view name) const { return FindSlot(name, Hash(name)) != kNone; }

  // As std::map::emplace: inserts unless the name is there already.
  std::pair<iterator, bool> emplace(std::string name, V value) {
    const uint64_t h = Hash(name);
    if (const size_t s = FindSlot(name, h); s != kNone) return {slots_[s].it, false};
    auto [it, inserted] = ordered_.emplace(std::move(name), std::move(value));
    assert(inserted);
    if ((ordered_.size() + 1) * 4 > slots_.size() * 3) Rehash(slots_.empty() ? 16 : slots_.size() * 2);
    Place(h, it);
    return {it, inserted};
  }
  // Removes the name; returns how many entries went (0 or 1).
  size_t erase(std::string_view name) {
    size_t s = FindSlot(name, Hash(name));
    if (s == kNone) return 0;
    ordered_.erase(slots_[s].it);
    // Backward-shift deletion: later entries of the probe run move up, so
    // no tombstones are left to slow lookups down.
    const size_t mask = slots_.size() - 1;
    slots_[s].used = false;
    for (size_t next = (s + 1) & mask; slots_[next].used; next = (next + 1) & mask) {
      const size_t home = slots_[next].hash & mask;
      // Move `next` into the hole unless its home lies cyclically in (s, next].
      const bool stays = s <= next ? (s < home && home <= next) : (s < home || home <= next);
      if (stays) continue;
      slots_[s] = slots_[next];
      slots_[next].used = false;
      s = next;
    }
    return 1;
  }
  void clear() {
    slots_.clear();
    ordered_.clear();
  }

  // In name order.
  iterator begin() { return ordered_.begin(); }
  iterator end() { return ordered_.end(); }
  const_iterator begin() const { return ordered_.begin(); }
  const_iterator end() const { return ordered_.end(); }
  iterator lower_bound(std::string_view name) { return ordered_.lower_bound(name); }
  const_iterator lower_bound(std::string_view name) const { return ordered_.lower_bound(name); }

  size_t size() const { return ordered_.size(); }
  bool empty() const { return ordered_.empty(); }

 private:
  struct Slot {
    uint64_t hash = 0;
    iterator it{};
    bool used = false;
  };
  static constexpr size_t kNone = SIZE_MAX;

  static uint64_t Hash(std::string_view name) { return std::hash<std::string_view>{}(name); }

  size_t FindSlot(std::string_view name, uint64_t h) const {
    if (slots_.empty()) return kNone;
    const size_t mask = slots_.size() - 1;
    for (size_t s = h & mask;; s = (s + 1) & mask) {
      const Slot& slot = slots_[s];
      if (!slot.used) return kNone;
      if (slot.hash == h && slot.it->first == name) return s;
    }
  }
  void Place(uint64_t h, iterator it) {
    const size_t mask = slots_.size() - 1;
    size_t s = h & mask;
    while (slots_[s].used) s = (s + 1) & mask;
    slots_[s] = Slot{h, it, true};
  }
  void Rehash(size_t n) {  // n: a power of two
    std::vector<Slot> old(n);
    old.swap(slots_);
    for (const Slot& slot : old)
      if (slot.used) Place(slot.hash, slot.it);
  }

  Ordered ordered_;
  std::vector<Slot> slots_;  // a power of two of them, at most 3/4 used
};

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_UTIL_NAME_MAP_H_
