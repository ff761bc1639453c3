#include "engine/space/allocator.h"

#include <algorithm>
#include <utility>

namespace slabfs::engine {

void Allocator::Reset(uint64_t file_end, const std::vector<FreedExtent>& free) {
  MutexLock lock(mu_);
  file_end_ = file_end;
  free_.clear();
  by_size_.clear();
  fresh_.clear();
  born_.clear();
  pending_.clear();
  held_.clear();
  journal_.clear();
  free_bytes_ = pending_bytes_ = held_bytes_ = 0;
  for (const auto& e : free) {
    if (e.generation == 0) {
      InsertFreeLocked(e.addr, e.len);
    } else {
      held_.push_back(e);
      held_bytes_ += e.len;
    }
  }
}

void Allocator::EraseFreeLocked(std::map<uint64_t, uint64_t>::iterator it) {
  by_size_.erase({it->second, it->first});
  free_bytes_ -= it->second;
  free_.erase(it);
}

void Allocator::InsertFreeLocked(uint64_t addr, uint64_t len) {
  if (len == 0) return;
  auto next = free_.lower_bound(addr);
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == addr) {
      addr = prev->first;
      len += prev->second;
      EraseFreeLocked(prev);
    }
  }
  next = free_.lower_bound(addr);
  if (next != free_.end() && addr + len == next->first) {
    len += next->second;
    EraseFreeLocked(next);
  }
  free_[addr] = len;
  by_size_.insert({len, addr});
  free_bytes_ += len;
}

uint64_t Allocator::Allocate(uint64_t len, uint64_t align) {
  MutexLock lock(mu_);
  if (len == 0) len = 1;
  if (packed_) align = 1;
  auto aligned = [align](uint64_t a) { return (a + align - 1) & ~(align - 1); };
  // Best fit: the smallest free extent that holds len at an aligned start.
  // Looking past a few candidates is not worth it; an extent of
  // len + align - 1 bytes always fits.
  auto it = by_size_.lower_bound({len, 0});
  for (int tries = 0; it != by_size_.end(); ++it, ++tries) {
    uint64_t a = aligned(it->second);
    if (a - it->second + len <= it->first) break;
    if (tries == 8) {
      it = by_size_.lower_bound({len + align - 1, 0});
      break;
    }
  }
  uint64_t addr;
  if (it != by_size_.end()) {
    uint64_t ext_addr = it->second, ext_len = it->first;
    EraseFreeLocked(free_.find(ext_addr));
    addr = aligned(ext_addr);
    InsertFreeLocked(ext_addr, addr - ext_addr);
    InsertFreeLocked(addr + len, ext_addr + ext_len - addr - len);
    Journal(addr, len, false);
  } else {
    // At the end of the file. A free extent that ends at file_end is too
    // small on its own, but the allocation starts inside it.
    uint64_t start = file_end_;
    if (!free_.empty()) {
      auto last = std::prev(free_.end());
      if (last->first + last->second == file_end_) {
        start = last->first;
        EraseFreeLocked(last);
      }
    }
    addr = aligned(start);
    InsertFreeLocked(start, addr - start);
    if (addr + len < file_end_) InsertFreeLocked(addr + len, file_end_ - addr - len);
    // Of [start, file_end), which was free, [addr, addr + len) no longer
    // is; an alignment gap past the old end is newly free.
    const uint64_t old_end = file_end_;
    if (addr < old_end) Journal(addr, std::min(addr + len, old_end) - addr, false);
    const uint64_t gap_start = std::max(start, old_end);
    if (addr > gap_start) Journal(gap_start, addr - gap_start, true);
    file_end_ = std::max(file_end_, addr + len);
  }
  fresh_[addr] = len;
  return addr;
}

void Allocator::Free(uint64_t addr, uint64_t len) {
  MutexLock lock(mu_);
  auto f = fresh_.find(addr);
  if (f != fresh_.end()) {
    fresh_.erase(f);
    InsertFreeLocked(addr, len);
    Journal(addr, len, true);
  } else {
    uint64_t born = 0;
    if (auto b = born_.find(addr); b != born_.end()) {
      born = b->second;
      born_.erase(b);
    }
    pending_.push_back({addr, len, born});
    pending_bytes_ += len;
  }
}

bool Allocator::IsFresh(uint64_t addr) const {
  MutexLock lock(mu_);
  return fresh_.count(addr) != 0;
}

std::optional<std::vector<std::pair<uint64_t, uint64_t>>> Allocator::FreshExtents(size_t max_count,
                                                                                  uint64_t max_bytes) const {
  MutexLock lock(mu_);
  if (fresh_.size() > max_count) return std::nullopt;
  std::vector<std::pair<uint64_t, uint64_t>> out(fresh_.begin(), fresh_.end());
  uint64_t total = 0;
  for (const auto& e : out) {
    total += e.second;
    if (total > max_bytes) return std::nullopt;
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<FreedExtent> Allocator::Unreferenced(uint64_t generation, int64_t now) const {
  MutexLock lock(mu_);
  std::vector<FreedExtent> all;
  all.reserve(free_.size() + held_.size() + pending_.size());
  for (const auto& [a, l] : free_) all.push_back({a, l, 0, 0});
  all.insert(all.end(), held_.begin(), held_.end());
  for (const Pending& e : pending_) all.push_back({e.addr, e.len, generation, now});
  std::sort(all.begin(), all.end(), [](const FreedExtent& x, const FreedExtent& y) { return x.addr < y.addr; });
  std::vector<FreedExtent> merged;
  for (auto e : all) {
    e.born = 0;  // not part of the free list on disk
    FreedExtent* last = merged.empty() ? nullptr : &merged.back();
    if (last && last->addr + last->len == e.addr && last->generation == e.generation && last->time == e.time) {
      last->len += e.len;
    } else {
      merged.push_back(e);
    }
  }
  return merged;
}

std::vector<FreeListChange> Allocator::Changes(uint64_t generation, int64_t now) const {
  MutexLock lock(mu_);
  std::vector<FreeListChange> out;
  out.reserve(journal_.size() + pending_.size());
  out = journal_;
  for (const Pending& e : pending_) out.push_back({e.addr, e.len, generation, now, true});
  return out;
}

size_t Allocator::num_changes() const {
  MutexLock lock(mu_);
  return journal_.size() + pending_.size();
}

uint64_t Allocator::TrimTail() {
  MutexLock lock(mu_);
  if (!free_.empty()) {
    auto last = std::prev(free_.end());
    if (last->first + last->second == file_end_) {
      file_end_ = last->first;
      Journal(last->first, last->second, false);
      EraseFreeLocked(last);
    }
  }
  return file_end_;
}

void Allocator::MarkDurable(uint64_t generation, int64_t now) {
  MutexLock lock(mu_);
  if (generation != 0) {
    for (const auto& [addr, len] : fresh_) {
      if (born_.size() >= kMaxBirths) break;
      born_[addr] = generation;
    }
  }
  fresh_.clear();
  journal_.clear();
  for (const auto& e : pending_) {
    if (generation == 0) {
      InsertFreeLocked(e.addr, e.len);
    } else {
      held_.push_back({e.addr, e.len, generation, now, e.born});
      held_bytes_ += e.len;
    }
  }
  pending_.clear();
  pending_bytes_ = 0;
}

uint64_t Allocator::Release(const std::function<bool(uint64_t, uint64_t)>& seen, int64_t made_by) {
  MutexLock lock(mu_);
  uint64_t released = 0;
  std::map<std::pair<uint64_t, uint64_t>, bool> asked;  // (born, freed) -> seen
  std::erase_if(held_, [&](const FreedExtent& e) REQUIRES(mu_) {
    if (e.time > made_by) return false;
    const std::pair<uint64_t, uint64_t> key{std::min(e.born, e.generation), e.generation};
    auto it = asked.find(key);
    if (it == asked.end()) it = asked.emplace(key, seen(key.first, key.second)).first;
    if (it->second) return false;
    InsertFreeLocked(e.addr, e.len);
    released += e.len;
    return true;
  });
  held_bytes_ -= released;
  return released;
}

uint64_t Allocator::Release(uint64_t oldest_reader, int64_t made_by) {
  return Release([oldest_reader](uint64_t, uint64_t freed) { return oldest_reader < freed; }, made_by);
}

uint64_t Allocator::file_end() const {
  MutexLock lock(mu_);
  return file_end_;
}

uint64_t Allocator::free_bytes() const {
  MutexLock lock(mu_);
  return free_bytes_ + held_bytes_ + pending_bytes_;
}

uint64_t Allocator::held_bytes() const {
  MutexLock lock(mu_);
  return held_bytes_;
}

size_t Allocator::num_free_extents() const {
  MutexLock lock(mu_);
  return free_.size();
}

}  // namespace slabfs::engine
