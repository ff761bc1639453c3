#include "engine/cache/chunk_cache.h"

#include <algorithm>

#include "engine/cache/buffer_pool.h"
#include "engine/util/expensive_checks.h"
#include "engine/util/log.h"

namespace slabfs::engine {
namespace {
constexpr size_t kMaxGhosts = 8192;
}

// One chunk's load under a Claim: its waiters sleep until `done`.
struct ChunkCache::Load {
  Mutex mu{LockRank::kChunkLoad};
  CondVar finished;
  bool done GUARDED_BY(mu) = false;
};

ChunkCache::ChunkCache(uint64_t budget, uint64_t max_budget)
    : budget_(budget), max_budget_(std::max(budget, max_budget)) {}

ChunkCache::~ChunkCache() {
  // What a closing container held serves the next one (buffer_pool.h).
  for (auto& [key, e] : map_) BufferPool::Global().Give(std::move(e->data), e->bytes);
}

void ChunkCache::TouchLocked(Entry* e) {
  auto& from = e->in_done_list.load(std::memory_order_relaxed) ? done_ : lru_;
  const bool done = e->used.load(std::memory_order_relaxed) >= e->bytes;
  auto& to = done ? done_ : lru_;
  to.splice(to.end(), from, e->pos);
  e->in_done_list.store(done, std::memory_order_relaxed);
  e->order = ++order_seq_;
}

void ChunkCache::SetDirtyLocked(Entry* e, bool dirty) {
  if (e->dirty == dirty) return;
  e->dirty = dirty;
  if (dirty) {
    dirty_bytes_ += e->bytes;
    dirty_of_[e->key.dataset].entries.insert(e);
  } else {
    dirty_bytes_ -= e->bytes;
    auto it = dirty_of_.find(e->key.dataset);
    if (it != dirty_of_.end()) {
      it->second.entries.erase(e);
      if (e->finished) it->second.finished_bytes -= e->bytes;
      if (it->second.entries.empty()) dirty_of_.erase(it);
    }
    // Stored (or dropped): writes count again from here.
    e->finished = false;
    e->stream_end = 0;
    e->streamed = 0;
    e->in_order = true;
  }
}

void ChunkCache::FinishLocked(Entry* e) {
  if (e->finished || !e->dirty) return;
  auto it = dirty_of_.find(e->key.dataset);
  if (it == dirty_of_.end()) return;
  e->finished = true;
  it->second.finished_bytes += e->bytes;
}

ChunkCache::Entry* ChunkCache::Lookup(const CacheKey& key) {
  MutexLock lock(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) {
    ++misses_;
    if (ghosts_.count(key) && budget_ < max_budget_) {
      // The chunk was evicted and is wanted again: the working set is larger
      // than the budget.
      ghosts_.erase(key);
      budget_ = std::min(max_budget_,
                         budget_.load() + std::max<uint64_t>(resident_ / std::max<size_t>(map_.size(), 1), 4096));
    }
    return nullptr;
  }
  ++hits_;
  Entry* e = it->second.get();
  ++e->pins;
  TouchLocked(e);
  return e;
}

ChunkCache::Entry* ChunkCache::Peek(const CacheKey& key) {
  MutexLock lock(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) return nullptr;
  ++it->second->pins;
  return it->second.get();
}

bool ChunkCache::Contains(const CacheKey& key) const {
  MutexLock lock(mu_);
  return map_.count(key) != 0;
}

bool ChunkCache::HasChanges(uint64_t dataset) const {
  MutexLock lock(mu_);
  return dirty_of_.count(dataset) != 0;
}

bool ChunkCache::HoldsChanges(const CacheKey& key) const {
  MutexLock lock(mu_);
  auto it = map_.find(key);
  return it != map_.end() && (it->second->dirty || it->second->partial.load(std::memory_order_acquire));
}

ChunkCache::Entry* ChunkCache::Insert(const CacheKey& key, std::unique_ptr<char[]> data, size_t bytes, bool dirty) {
  std::shared_ptr<Load> load;
  Entry* e = nullptr;
  {
    MutexLock lock(mu_);
    auto it = map_.find(key);
    if (it != map_.end()) {
      e = it->second.get();
      ++e->pins;
      TouchLocked(e);
      RecycleLocked(std::move(data), bytes);
    } else {
      auto owned = std::make_unique<Entry>();
      e = owned.get();
      e->key = key;
      e->data = std::move(data);
      e->bytes = bytes;
      e->pins = 1;
      // Into the map first: a list node that fails to allocate leaves no
      // entry behind, and no list node names an entry the map lacks.
      auto placed = map_.emplace(key, std::move(owned)).first;
      try {
        lru_.push_back(e);
      } catch (...) {
        map_.erase(placed);
        throw;
      }
      e->pos = std::prev(lru_.end());
      e->order = ++order_seq_;
      resident_ += bytes;
      SetDirtyLocked(e, dirty);
    }
    // Last, once the chunk is in: if anything above throws, the load is
    // still registered, and the claim's holder hands it on (~Claim).
    load = TakeLoadLocked(key, nullptr);
  }
  FinishLoad(load);
  return e;
}

std::shared_ptr<ChunkCache::Load> ChunkCache::TakeLoadLocked(const CacheKey& key, const Load* load) {
  if (loading_.empty()) return nullptr;
  auto it = loading_.find(key);
  if (it == loading_.end() || (load != nullptr && it->second.get() != load)) return nullptr;
  std::shared_ptr<Load> taken = std::move(it->second);
  loading_.erase(it);
  return taken;
}

void ChunkCache::FinishLoad(const std::shared_ptr<Load>& load) {
  if (!load) return;
  MutexLock lock(load->mu);
  load->done = true;
  load->finished.NotifyAll();
}

ChunkCache::Entry* ChunkCache::ClaimLoad(const CacheKey& key, Claim* claim) {
  for (;;) {
    std::shared_ptr<Load> wait;
    {
      MutexLock lock(mu_);
      auto it = map_.find(key);
      if (it != map_.end()) {
        Entry* e = it->second.get();
        ++e->pins;
        TouchLocked(e);
        return e;
      }
      auto lit = loading_.find(key);
      if (lit == loading_.end()) {
        // Made before it is registered: an allocation that fails leaves
        // nothing in loading_ for the next reader to wait on.
        auto load = std::make_shared<Load>();
        loading_.emplace(key, load);
        claim->cache_ = this;
        claim->key_ = key;
        claim->load_ = std::move(load);
        return nullptr;
      }
      wait = lit->second;
    }
    if (NoBlockIoLocksHeld() != 0) {
      // The wait lasts another thread's read and decode of the chunk.
      LogWarn("a chunk load waited for under a lock that forbids block I/O (engine/util/lock_order.h)");
      if (ExpensiveChecks()) std::abort();
    }
    MutexLock lock(wait->mu);
    while (!wait->done) wait->finished.Wait(wait->mu);
  }
}

ChunkCache::Claim::~Claim() {
  if (!load_) return;
  std::shared_ptr<Load> load;
  {
    MutexLock lock(cache_->mu_);
    load = cache_->TakeLoadLocked(key_, load_.get());
  }
  FinishLoad(load);
}

ChunkCache::Entry* ChunkCache::Claim::Fill(std::unique_ptr<char[]> data, size_t bytes) {
  Entry* e = cache_->Insert(key_, std::move(data), bytes, /*dirty=*/false);
  load_.reset();
  return e;
}

void ChunkCache::Release(Entry* e, uint64_t used_bytes) {
  const uint64_t used = e->used.fetch_add(used_bytes, std::memory_order_relaxed) + used_bytes;
  if (used >= e->bytes && !e->in_done_list.load(std::memory_order_relaxed)) {
    MutexLock lock(mu_);
    if (!e->in_done_list.load(std::memory_order_relaxed)) TouchLocked(e);
  }
  // Last: the entry may be evicted (under mu_) once unpinned, and what
  // the caller did with its bytes comes before that.
  e->pins.fetch_sub(1, std::memory_order_release);
}

bool ChunkCache::ReleaseWritten(Entry* e, uint64_t used_bytes, uint64_t written, uint64_t lo, uint64_t hi,
                                uint64_t elements) {
  // The stream fields belong to the dataset's writer, the only thread
  // here; SetDirtyLocked resets them under mu_ when the writer stores the
  // chunk, never while it writes.
  bool now_finished = false;
  if (lo < e->stream_end) {
    e->in_order = false;
    if (e->finished) {
      // Finished, then written over again (a header patched after the
      // body): no longer finished, so write-behind leaves it to the commit.
      MutexLock lock(mu_);
      UnfinishLocked(e);
    }
  }
  e->stream_end = hi;
  e->streamed += written;
  if (e->in_order && !e->finished && e->streamed >= elements) {
    MutexLock lock(mu_);
    FinishLocked(e);
    now_finished = e->finished;
  }
  Release(e, used_bytes);
  return now_finished;
}

void ChunkCache::UnfinishLocked(Entry* e) {
  if (!e->finished) return;
  e->finished = false;
  auto it = dirty_of_.find(e->key.dataset);
  if (it != dirty_of_.end()) it->second.finished_bytes -= e->bytes;
}

void ChunkCache::MarkDirty(Entry* e) {
  MutexLock lock(mu_);
  SetDirtyLocked(e, true);
}

void ChunkCache::MarkClean(Entry* e) {
  MutexLock lock(mu_);
  SetDirtyLocked(e, false);
}

void ChunkCache::Drop(Entry* e) {
  MutexLock lock(mu_);
  SetDirtyLocked(e, false);
  if (--e->pins == 0) RemoveLocked(e);
}

void ChunkCache::RememberGhostLocked(const CacheKey& k) {
  uint64_t seq = ++ghost_seq_;
  ghosts_[k] = seq;
  ghost_order_.emplace_back(k, seq);
  while (ghosts_.size() > kMaxGhosts || ghost_order_.size() > 2 * kMaxGhosts) {
    auto [key, s] = ghost_order_.front();
    ghost_order_.pop_front();
    auto it = ghosts_.find(key);
    if (it != ghosts_.end() && it->second == s) ghosts_.erase(it);
  }
}

bool ChunkCache::CacheOnRepeat(const CacheKey& key, uint64_t lo, uint64_t hi) {
  MutexLock lock(mu_);
  Bypassed& b = bypassed_[key];
  const size_t filled = std::min(b.count, Bypassed::kSpans);
  for (size_t i = 0; i < filled; ++i) {
    if (lo < b.spans[i].second && b.spans[i].first < hi) {
      bypassed_.erase(key);
      return true;
    }
  }
  b.spans[b.count % Bypassed::kSpans] = {lo, hi};
  ++b.count;
  b.seq = ++bypass_seq_;
  bypassed_order_.emplace_back(key, b.seq);
  while (bypassed_.size() > kMaxGhosts || bypassed_order_.size() > 2 * kMaxGhosts) {
    auto [k, s] = bypassed_order_.front();
    bypassed_order_.pop_front();
    auto it = bypassed_.find(k);
    if (it != bypassed_.end() && it->second.seq == s) bypassed_.erase(it);
  }
  return false;
}

void ChunkCache::RecycleLocked(std::unique_ptr<char[]> data, size_t bytes) {
  BufferPool::Global().Give(std::move(data), bytes);
}

std::unique_ptr<char[]> ChunkCache::TakeBuffer(size_t bytes) { return BufferPool::Global().Take(bytes); }

void ChunkCache::RemoveLocked(Entry* e) {
  (e->in_done_list ? done_ : lru_).erase(e->pos);
  resident_ -= e->bytes;
  SetDirtyLocked(e, false);
  RecycleLocked(std::move(e->data), e->bytes);
  map_.erase(e->key);
}

void ChunkCache::EvictToBudget() {
  if (!over_budget()) return;  // the common case, without the lock
  MutexLock lock(mu_);
  for (auto* list : {&done_, &lru_}) {
    for (auto it = list->begin(); it != list->end() && resident_ > budget_;) {
      Entry* e = *it++;
      if (e->pins > 0 || e->dirty) continue;
      // A fully used chunk is not worth a ghost: wanting it again is not a
      // sign that the budget is too small.
      if (!e->in_done_list) RememberGhostLocked(e->key);
      RemoveLocked(e);
      ++evictions_;
    }
  }
}

bool ChunkCache::over_budget() const {
  return resident_.load(std::memory_order_relaxed) > budget_.load(std::memory_order_relaxed);
}

std::vector<ChunkCache::Entry*> ChunkCache::DirtyEntries(uint64_t dataset, size_t max_entries) {
  MutexLock lock(mu_);
  std::vector<Entry*> out;
  auto it = dirty_of_.find(dataset);
  if (it == dirty_of_.end()) return out;
  out.assign(it->second.entries.begin(), it->second.entries.end());
  // In list order: the fully used list first, each least recently used first.
  std::sort(out.begin(), out.end(), [](const Entry* a, const Entry* b) {
    const bool da = a->in_done_list.load(std::memory_order_relaxed);
    const bool db = b->in_done_list.load(std::memory_order_relaxed);
    return da != db ? da : a->order < b->order;
  });
  if (out.size() > max_entries) out.resize(max_entries);
  for (Entry* e : out) ++e->pins;
  return out;
}

std::vector<ChunkCache::Entry*> ChunkCache::ShedCandidates(uint64_t dataset, size_t max_entries) {
  MutexLock lock(mu_);
  std::vector<Entry*> out;
  for (Entry* e : done_) {
    if (out.size() >= max_entries) return out;
    if (e->dirty && e->pins == 0 && e->key.dataset == dataset) {
      ++e->pins;
      out.push_back(e);
    }
  }
  if (!out.empty()) return out;
  uint64_t over = resident_ > budget_ ? resident_ - budget_ : 0;
  for (Entry* e : lru_) {
    if (over == 0 || out.size() >= max_entries) break;
    if (e->dirty && e->pins == 0 && e->key.dataset == dataset) {
      ++e->pins;
      out.push_back(e);
      over -= std::min(over, static_cast<uint64_t>(e->bytes));
    }
  }
  return out;
}

std::vector<ChunkCache::Entry*> ChunkCache::FinishedDirty(uint64_t dataset) {
  MutexLock lock(mu_);
  std::vector<Entry*> out;
  auto it = dirty_of_.find(dataset);
  if (it == dirty_of_.end() || it->second.finished_bytes == 0 || it->second.finished_bytes < write_behind_window()) {
    return out;
  }
  for (Entry* e : it->second.entries)
    if (e->finished && e->pins == 0) out.push_back(e);
  std::sort(out.begin(), out.end(), [](const Entry* a, const Entry* b) { return a->order < b->order; });
  for (Entry* e : out) ++e->pins;
  return out;
}

void ChunkCache::EvictStored(const std::vector<CacheKey>& keys) {
  MutexLock lock(mu_);
  for (const CacheKey& k : keys) {
    auto it = map_.find(k);
    if (it == map_.end()) continue;
    Entry* e = it->second.get();
    if (e->pins > 0 || e->dirty || e->partial.load(std::memory_order_acquire)) continue;
    RemoveLocked(e);
    ++evictions_;
  }
}

void ChunkCache::EraseDataset(uint64_t dataset) {
  MutexLock lock(mu_);
  std::vector<Entry*> victims;
  for (auto& [k, e] : map_)
    if (k.dataset == dataset && e->pins == 0) victims.push_back(e.get());
  for (Entry* e : victims) RemoveLocked(e);
}

bool ChunkCache::Erase(const CacheKey& key) {
  MutexLock lock(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) return true;
  if (it->second->pins > 0) return false;
  RemoveLocked(it->second.get());
  return true;
}

CacheStats ChunkCache::stats() const {
  CacheStats s;
  s.hits = hits_;
  s.misses = misses_;
  s.bytes_read = bytes_read_;
  s.bytes_written = bytes_written_;
  s.evictions = evictions_;
  s.bypass_reads = bypass_reads_;
  s.bypass_writes = bypass_writes_;
  s.extent_reads = extent_reads_;
  MutexLock lock(mu_);
  s.resident_bytes = resident_;
  s.budget_bytes = budget_;
  return s;
}

}  // namespace slabfs::engine
