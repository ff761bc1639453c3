// The chunk cache: memory images of chunks, shared by every dataset of a
// container, bounded by a byte budget.
//
// Unlike HDF5's direct-mapped table, it is a real hash map (two chunks never
// evict each other because their hashes collide), ordered by recency with
// HDF5's w0 preference: chunks that have been read or written in full since
// they were loaded are evicted before the others.
//
// Sizing by access, where allowed (max_budget above budget,
// OpenOptions::cache_max_bytes): keys of recently evicted chunks are
// remembered (a ghost list); a miss on one means the working set did not
// fit, and the budget grows by the average resident chunk size (at least
// 4 KiB), up to max_budget. A sequential pass whose chunks are each used up
// in one go never hits a ghost, so the budget stays put. By default the
// budget is a hard bound.
//
// Dirty entries are never evicted here: only the dataset that owns them
// writes them back (it holds its write lock), then they become evictable.
// When the budget is exceeded, clean entries go first, then dirty ones that
// are fully used, and a chunk still being filled only when nothing else is
// left (ShedCandidates): a working set that fits is written once.
//
// Write-behind (FinishedDirty, EvictStored): a chunk streamed in full
// since it was last stored is finished: every write to it began past the
// end of the one before, in the chunk's element order, and together they
// cover it (a row-by-row pass, `dd`, a memmap flush). Once a dataset's
// finished chunks add up to a window (an eighth of the budget), its writer
// stores them and drops them, and their buffers serve the next chunks it
// fills: a streaming write keeps a band of chunks and the window
// resident, not the whole budget. (Fresh memory costs page faults and, on
// a virtual machine, more: a streaming write that first filled the whole
// budget with dirty chunks spent most of its time faulting buffers in.)
// Chunks written out of order, or over again (sliding windows, a row
// rewritten, a header patched after the body, even once the chunk was
// finished), are not finished, so write-behind does not store a chunk
// that later writes change again; chunks read in full keep their place.
//
// Loads are single-flight (ClaimLoad): when several readers miss one chunk
// at once (the kernel's read-ahead requests arrive together and cut across
// the same chunks), one loads and decodes it and the others wait for it.
//
// Thread safety: all methods are thread-safe. An entry returned by Lookup,
// Insert or ClaimLoad is pinned (not evicted) until Unpin. Its bytes may be read by any
// holder of the dataset's read lock and changed only under its write lock.
#ifndef SLABFS_ENGINE_CACHE_CHUNK_CACHE_H_
#define SLABFS_ENGINE_CACHE_CHUNK_CACHE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/util/adaptive_mutex.h"
#include "engine/util/mutex.h"
#include "slabfs/types.h"

namespace slabfs::engine {

struct CacheKey {
  uint64_t dataset = 0;  // the dataset state's cache identity (not its object id)
  uint64_t chunk = 0;    // linear position in its chunk grid
  bool operator==(const CacheKey&) const = default;
};

struct CacheKeyHash {
  size_t operator()(const CacheKey& k) const {
    uint64_t h = k.dataset * 0x9E3779B97F4A7C15ull ^ (k.chunk + 0x632BE59BD9B4E019ull + (k.dataset << 6));
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    return static_cast<size_t>(h ^ (h >> 32));
  }
};

class ChunkCache {
  struct Load;

 public:
  struct Entry {
    CacheKey key;
    std::unique_ptr<char[]> data;
    size_t bytes = 0;
    bool dirty = false;
    // Changed under mu_, except that Release adds to `used` and drops its
    // pin without it (a read of a cached chunk then takes mu_ once, in
    // Lookup); everything that reads them to decide holds mu_.
    std::atomic<int> pins{0};
    // Write without read: a chunk partly overwritten before it was ever
    // loaded holds valid bytes only for the elements whose bit is set in
    // `written`; `partial` says the mask is in force. The owner merges the
    // stored chunk in (under merge_mu) before anything reads an unwritten
    // element or the chunk is written back.
    std::atomic<bool> partial{false};
    std::unique_ptr<uint64_t[]> written;
    uint64_t unwritten = 0;  // elements whose bit is clear
    // Held while merging; the merge reads the stored chunk (I/O).
    Mutex merge_mu{LockRank::kChunkMerge};
    std::atomic<uint64_t> used{0};  // bytes read or written since loaded (w0 bookkeeping)
    // Elements materialized in `data` (trimmed-edge datasets, whose cached
    // chunks are filled only up to the dataset's end: the rest reads as the
    // fill value and is filled in when the dataset grows over it); every
    // element for other datasets. Changed under the dataset's write lock.
    uint64_t filled = UINT64_MAX;
    // Write-behind's view of the writes since it was last stored (or
    // loaded), kept by the dataset's writer (ReleaseWritten) and reset when
    // it is stored: where the last write's span ended and the elements
    // written, while every write began at or past the end of the one
    // before (`in_order`); `finished` once they cover it (changed under
    // mu_, by the writer or when the entry is stored).
    uint64_t stream_end = 0;
    uint64_t streamed = 0;
    bool in_order = true;
    bool finished = false;
    std::atomic<bool> in_done_list{false};
    std::list<Entry*>::iterator pos;
    uint64_t order = 0;  // when it was last put at the end of its list (under mu_)
  };

  ChunkCache(uint64_t budget, uint64_t max_budget);
  ~ChunkCache();

  // A pinned entry, or nullptr (counted as a hit or a miss).
  Entry* Lookup(const CacheKey& key);
  // The entry, pinned, or nullptr, without counting or touching it (Unpin).
  Entry* Peek(const CacheKey& key);
  void Unpin(Entry* e) { e->pins.fetch_sub(1, std::memory_order_release); }
  // Whether the key is resident, without counting, pinning or touching it.
  bool Contains(const CacheKey& key) const;
  // Whether the key is resident with changes not yet written back (dirty
  // or partly written), without counting, pinning or touching it. Stable
  // while the caller holds the dataset's read lock.
  bool HoldsChanges(const CacheKey& key) const;
  // Adds a chunk image and pins it. If the key is already present (another
  // reader loaded it meanwhile), the existing entry is pinned and returned
  // and `data` is dropped.
  Entry* Insert(const CacheKey& key, std::unique_ptr<char[]> data, size_t bytes, bool dirty);
  // Records that `used_bytes` of the entry were used, then unpins it. Takes
  // the cache's lock only when the entry becomes fully used (it moves to
  // the list evicted first), once per load.
  void Release(Entry* e, uint64_t used_bytes);
  // Release for the dataset's writer (under its write lock), which wrote
  // `written` of the chunk's `elements` elements, all within [lo, hi) in
  // the chunk's element order, into the dirty entry: also takes the
  // cache's lock when the chunk becomes finished, or stops being so
  // (write-behind, above). True when it became finished.
  bool ReleaseWritten(Entry* e, uint64_t used_bytes, uint64_t written, uint64_t lo, uint64_t hi, uint64_t elements);

  // The right to load one chunk into the cache, held by one thread at a
  // time (ClaimLoad). Given up by Fill, or on destruction (the load failed,
  // or threw): then a waiting reader claims the chunk in turn.
  class Claim {
   public:
    Claim() = default;
    Claim(const Claim&) = delete;
    Claim& operator=(const Claim&) = delete;
    ~Claim();
    bool held() const { return load_ != nullptr; }
    // Inserts the loaded chunk (clean) and gives the claim up: Insert.
    Entry* Fill(std::unique_ptr<char[]> data, size_t bytes);

   private:
    friend class ChunkCache;
    ChunkCache* cache_ = nullptr;
    CacheKey key_;
    std::shared_ptr<Load> load_;
  };
  // For a reader that missed `key` (Lookup) and is about to load the chunk
  // whole into the cache: the entry, pinned, when it is resident now,
  // perhaps after waiting for another thread's load of it; else nullptr,
  // and *claim holds the claim: the caller loads the chunk and Fills it in.
  // A thread holds one claim at a time and waits for no other while it
  // does (no cycle of waits), and calls this holding no lock that forbids
  // block I/O (engine/util/lock_order.h): the wait lasts a load.
  Entry* ClaimLoad(const CacheKey& key, Claim* claim);

  void MarkDirty(Entry* e);
  void MarkClean(Entry* e);
  // Unpins the entry and removes it, dirty or not: its changes are gone.
  // (Removed once the last pin goes, if someone else holds it too.)
  void Drop(Entry* e);

  // Evicts clean, unpinned entries, least recently used first (fully used
  // ones before the rest), until resident bytes fit the budget.
  void EvictToBudget();
  bool over_budget() const;
  // Pinned dirty entries of one dataset, least recently used first. The
  // caller writes them back, MarkClean()s and Release()s them.
  std::vector<Entry*> DirtyEntries(uint64_t dataset, size_t max_entries = SIZE_MAX);
  // The dirty entries of one dataset to write back because the cache is
  // over budget with no clean entry left to evict (call EvictToBudget
  // first), pinned, at most max_entries: every fully used one (written or
  // read in full since loaded: the application has moved on), least
  // recently used first; then, only as many as it takes to cover what is
  // still over, partly used ones, least recently used first. So a chunk
  // still being filled is written back only when the chunks being filled
  // do not fit the budget together, and then once per eviction.
  std::vector<Entry*> ShedCandidates(uint64_t dataset, size_t max_entries);
  uint64_t dirty_bytes() const { return dirty_bytes_.load(std::memory_order_relaxed); }
  // Write-behind: the dataset's finished entries (written in full since
  // last stored, still dirty), pinned, least recently used first, when
  // they add up to the write-behind window or more; else none. The caller
  // writes them back, MarkClean()s and Release()s them, then EvictStored.
  std::vector<Entry*> FinishedDirty(uint64_t dataset);
  uint64_t write_behind_window() const { return budget_.load(std::memory_order_relaxed) / kWriteBehindDivisor; }
  // Drops those of `keys` that are resident, clean and unpinned, their
  // buffers kept for reuse (write-behind's second step).
  void EvictStored(const std::vector<CacheKey>& keys);
  static constexpr uint64_t kWriteBehindDivisor = 8;
  // Whether the dataset has dirty entries (changes not yet written back),
  // without pinning or touching anything.
  bool HasChanges(uint64_t dataset) const;
  // Drops every unpinned entry of the dataset, dirty or not.
  void EraseDataset(uint64_t dataset);
  // Drops the entry of `key`, dirty or not (its owner replaced the chunk
  // where it is stored). False, and nothing dropped, when it is pinned.
  bool Erase(const CacheKey& key);

  // A buffer for a chunk image of `bytes`: a recycled one when an evicted
  // chunk of that size (in this cache or a closed one) left one behind
  // (fresh memory costs page faults and the kernel's zeroing, as much as
  // the copy itself), else a new one (BufferPool).
  std::unique_ptr<char[]> TakeBuffer(size_t bytes);

  // A partial read of a chunk that is read straight from the file (an
  // unfiltered chunk not in the cache), of elements within [lo, hi) of it,
  // asks whether to cache the chunk instead: true when the span of one of
  // the last few partial reads of the same chunk overlaps this one (the
  // application reads those elements again, or moves across the chunk in
  // windows whose rows interleave), and the chunk should be loaded whole
  // into the cache; false otherwise, and this read is remembered. A
  // streaming pass, which reads each chunk whole or in pieces that do not
  // overlap (in any order: the kernel's read-ahead requests can arrive out
  // of order), is never cached: caching it would copy every byte twice.
  bool CacheOnRepeat(const CacheKey& key, uint64_t lo, uint64_t hi);

  CacheStats stats() const;
  void CountBytesRead(uint64_t n) { bytes_read_ += n; }
  void CountBytesWritten(uint64_t n) { bytes_written_ += n; }
  void CountBypassRead() { ++bypass_reads_; }
  void CountBypassWrite() { ++bypass_writes_; }
  void CountExtentRead() { ++extent_reads_; }

 private:
  void RemoveLocked(Entry* e) REQUIRES(mu_);
  void TouchLocked(Entry* e) REQUIRES(mu_);
  void RememberGhostLocked(const CacheKey& k) REQUIRES(mu_);
  void RecycleLocked(std::unique_ptr<char[]> data, size_t bytes) REQUIRES(mu_);
  // Ends the load of `key` if it is `load` (any, when null): drops it from
  // loading_ and returns it, for FinishLoad once mu_ is released.
  std::shared_ptr<Load> TakeLoadLocked(const CacheKey& key, const Load* load) REQUIRES(mu_);
  static void FinishLoad(const std::shared_ptr<Load>& load);

  // Innermost lock: nothing is called while holding it but the BufferPool,
  // whose lock is a leaf. Adaptive: every read of a cached chunk takes it
  // twice (Lookup, Release) for a few dozen instructions.
  mutable BasicMutex<AdaptiveMutex> mu_{LockRank::kChunkCache};
  std::unordered_map<CacheKey, std::unique_ptr<Entry>, CacheKeyHash> map_ GUARDED_BY(mu_);
  std::list<Entry*> lru_ GUARDED_BY(mu_);   // front = least recently used
  std::list<Entry*> done_ GUARDED_BY(mu_);  // fully used entries, evicted first
  // Ghosts: key -> sequence number of its latest eviction. The queue holds
  // (key, sequence) in eviction order; an entry whose sequence is no longer
  // the key's latest is stale and skipped when it reaches the front.
  std::unordered_map<CacheKey, uint64_t, CacheKeyHash> ghosts_ GUARDED_BY(mu_);
  // Chunks read in part straight from the file (CacheOnRepeat): the
  // sequence number of the latest read and the spans of the last few; at
  // most kMaxGhosts chunks, oldest dropped first.
  struct Bypassed {
    static constexpr size_t kSpans = 4;
    uint64_t seq = 0;
    std::pair<uint64_t, uint64_t> spans[kSpans] = {};
    size_t count = 0;  // spans filled; the next goes to count % kSpans
  };
  std::unordered_map<CacheKey, Bypassed, CacheKeyHash> bypassed_ GUARDED_BY(mu_);
  std::deque<std::pair<CacheKey, uint64_t>> bypassed_order_ GUARDED_BY(mu_);
  uint64_t bypass_seq_ GUARDED_BY(mu_) = 0;
  std::deque<std::pair<CacheKey, uint64_t>> ghost_order_ GUARDED_BY(mu_);
  uint64_t ghost_seq_ GUARDED_BY(mu_) = 0;
  // Written under mu_; read without it by over_budget (a hint: the
  // callers that act on it lock and look again).
  std::atomic<uint64_t> resident_{0};
  std::atomic<uint64_t> budget_;
  const uint64_t max_budget_;

  std::atomic<uint64_t> dirty_bytes_{0};
  // The dirty entries of each dataset (under mu_), so that a commit finds a
  // dataset's changes without looking at every cached chunk, and the bytes
  // of those finished (write-behind).
  struct DirtySet {
    std::unordered_set<Entry*> entries;
    uint64_t finished_bytes = 0;
  };
  std::unordered_map<uint64_t, DirtySet> dirty_of_ GUARDED_BY(mu_);
  uint64_t order_seq_ GUARDED_BY(mu_) = 0;
  // The chunks being loaded under a Claim, each with what its waiters wait on.
  std::unordered_map<CacheKey, std::shared_ptr<Load>, CacheKeyHash> loading_ GUARDED_BY(mu_);
  void SetDirtyLocked(Entry* e, bool dirty) REQUIRES(mu_);
  void FinishLocked(Entry* e) REQUIRES(mu_);
  void UnfinishLocked(Entry* e) REQUIRES(mu_);
  std::atomic<uint64_t> hits_{0}, misses_{0}, bytes_read_{0}, bytes_written_{0}, evictions_{0}, bypass_reads_{0},
      bypass_writes_{0}, extent_reads_{0};
};

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_CACHE_CHUNK_CACHE_H_
