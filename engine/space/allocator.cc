#include "engine/space/allocator.h"

#include <algorithm>

namespace slabfs::engine {

void Allocator::Reset(uint64_t file_end, const std::vector<Extent>& free) {
  std::lock_guard lock(mu_);
  file_end_ = file_end;
  free_.clear();
  by_size_.clear();
  fresh_.clear();
  pending_.clear();
  free_bytes_ = pending_bytes_ = 0;
  for (const auto& e : free) InsertFreeLocked(e.addr, e.len);
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
  std::lock_guard lock(mu_);
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
    file_end_ = std::max(file_end_, addr + len);
  }
  fresh_[addr] = len;
  return addr;
}

void Allocator::Free(uint64_t addr, uint64_t len) {
  std::lock_guard lock(mu_);
  auto f = fresh_.find(addr);
  if (f != fresh_.end()) {
    fresh_.erase(f);
    InsertFreeLocked(addr, len);
  } else {
    pending_.push_back({addr, len});
    pending_bytes_ += len;
  }
}

bool Allocator::IsFresh(uint64_t addr) const {
  std::lock_guard lock(mu_);
  return fresh_.count(addr) != 0;
}

std::vector<Extent> Allocator::Unreferenced() const {
  std::lock_guard lock(mu_);
  std::vector<Extent> all;
  all.reserve(free_.size() + pending_.size());
  for (const auto& [a, l] : free_) all.push_back({a, l});
  all.insert(all.end(), pending_.begin(), pending_.end());
  std::sort(all.begin(), all.end(), [](const Extent& x, const Extent& y) { return x.addr < y.addr; });
  std::vector<Extent> merged;
  for (const auto& e : all) {
    if (!merged.empty() && merged.back().addr + merged.back().len == e.addr) merged.back().len += e.len;
    else merged.push_back(e);
  }
  return merged;
}

uint64_t Allocator::TrimTail() {
  std::lock_guard lock(mu_);
  if (!free_.empty()) {
    auto last = std::prev(free_.end());
    if (last->first + last->second == file_end_) {
      file_end_ = last->first;
      EraseFreeLocked(last);
    }
  }
  return file_end_;
}

void Allocator::MarkDurable() {
  std::lock_guard lock(mu_);
  fresh_.clear();
  for (const auto& e : pending_) InsertFreeLocked(e.addr, e.len);
  pending_.clear();
  pending_bytes_ = 0;
}

uint64_t Allocator::file_end() const {
  std::lock_guard lock(mu_);
  return file_end_;
}

uint64_t Allocator::free_bytes() const {
  std::lock_guard lock(mu_);
  return free_bytes_ + pending_bytes_;
}

size_t Allocator::num_free_extents() const {
  std::lock_guard lock(mu_);
  return free_.size();
}

}  // namespace slabfs::engine
