// A map from names to values kept two ways: in name order (for listing,
// group pages and the records a commit writes) and by a hash of the name
// (for lookups). A lookup in a std::map of 100,000 names walks about 17
// nodes, each a dependent cache miss once the tree no longer fits in the
// caches; the hash finds the entry in one or two, so looking up the
// 100,000th child of a group costs what looking up the 10th does (issue 21:
// per-operation cost flat as a group grows).
//
// The hash holds views of the ordered map's keys and iterators into it;
// both stay valid as the map's nodes never move (the class is movable, not
// copyable: a move keeps the nodes).
#ifndef SLABFS_ENGINE_UTIL_NAME_MAP_H_
#define SLABFS_ENGINE_UTIL_NAME_MAP_H_

#include <cassert>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

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
    auto h = hash_.find(name);
    return h == hash_.end() ? ordered_.end() : h->second;
  }
  const_iterator find(std::string_view name) const {
    auto h = hash_.find(name);
    return h == hash_.end() ? ordered_.end() : const_iterator(h->second);
  }
  size_t count(std::string_view name) const { return hash_.count(name); }
  bool contains(std::string_view name) const { return hash_.count(name) != 0; }

  // As std::map::emplace: inserts unless the name is there already.
  std::pair<iterator, bool> emplace(std::string name, V value) {
    auto [it, inserted] = ordered_.emplace(std::move(name), std::move(value));
    if (inserted) hash_.emplace(std::string_view(it->first), it);
    assert(hash_.size() == ordered_.size());
    return {it, inserted};
  }
  // Removes the name; returns how many entries went (0 or 1).
  size_t erase(std::string_view name) {
    auto h = hash_.find(name);
    if (h == hash_.end()) return 0;
    iterator it = h->second;
    hash_.erase(h);  // before the key it views goes
    ordered_.erase(it);
    assert(hash_.size() == ordered_.size());
    return 1;
  }
  void clear() {
    hash_.clear();
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
  Ordered ordered_;
  std::unordered_map<std::string_view, iterator> hash_;
};

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_UTIL_NAME_MAP_H_
