// Dataset I/O: hyperslab reads and writes through the chunk cache, with the
// bypass paths that move whole chunks between the file and the caller's
// buffer without an intermediate copy, and whole-dataset operations.
// Element ranges and the byte view are in dataset_bytes.cc, resizing in
// dataset_resize.cc, what elements are defined and erasing them in
// dataset_defined.cc, and answering reads with file extents in
// file_extents.cc.
#include <algorithm>
#include <cstring>

#include "engine/chunk/read_stripes.h"
#include "engine/chunk/trimmed_edge.h"
#include "engine/container_impl.h"
#include "engine/format/layout.h"
#include "engine/index/dataset_geometry.h"
#include "engine/selection/boxes.h"
#include "engine/util/math.h"
#include "engine/util/thread_pool.h"

namespace slabfs::engine {
namespace {

// Cache identities: one per DatasetState, never reused, so that a state
// built to replace another's contents (Relayout) never shares cache entries
// with it although both belong to the same object.
uint64_t NextCacheId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// A whole-chunk write with more runs than this goes through the cache, where
// it is one contiguous write, rather than one iovec per run.
constexpr uint64_t kMaxDirectRuns = 4096;
// Write-back encodes dirty chunks in batches of about this many bytes.
constexpr uint64_t kMaxEncodeBatchBytes = 64 << 20;

// Whether a partial read of an unfiltered chunk should load the chunk whole
// into the cache instead of reading straight from the file: when the span
// it covers is most of the chunk (a column: reading the span costs as much
// as the chunk, and the next columns are then hits), or when it comes back
// to elements a recent partial read of the chunk read
// (ChunkCache::CacheOnRepeat).
bool CachePartialRead(ChunkCache& cache, const CacheKey& key, const ChunkCursor& cur) {
  uint64_t lo = UINT64_MAX, hi = 0;
  cur.ForEachRun([&](uint64_t co, uint64_t /*mo*/, uint64_t n) {
    lo = std::min(lo, co);
    hi = std::max(hi, co + n);
  });
  if ((hi - lo) * 4 >= cur.chunk_elements() * 3) return true;
  return cache.CacheOnRepeat(key, lo, hi);
}

// How many stripes the gather writes of whole chunks are split into (reads:
// ReadStripes): one per core once the bytes reach kParallelBytes.
size_t WriteStripes(const TransferPlan& plan, size_t item_size) {
  uint64_t chunks = plan.chunks_touched();
  if (chunks < 2 || plan.num_elements() * item_size < kParallelBytes) return 1;
  return static_cast<size_t>(std::min<uint64_t>(ParallelWidth(), chunks));
}

// Runs stripe(w, width) for w in [0, width) on the pool; the first error wins.
Status RunStriped(size_t width, const std::function<Status(size_t, size_t)>& stripe) {
  if (width <= 1) return stripe(0, 1);
  std::vector<Status> results(width);
  ParallelFor(width, [&](size_t w) { results[w] = stripe(w, width); });
  for (auto& r : results)
    if (!r.ok()) return r;
  return Status::OK();
}

// Whether every run of the cursor ends within the first `elements` of the
// chunk (a trimmed chunk's stored part).
bool RunsEndWithin(const ChunkCursor& cur, uint64_t elements) {
  bool within = true;
  cur.ForEachRun([&](uint64_t co, uint64_t /*mo*/, uint64_t n) { within = within && co + n <= elements; });
  return within;
}

// Sets bits [start, start + n) of the mask; returns how many were clear.
uint64_t SetBits(uint64_t* mask, uint64_t start, uint64_t n) {
  uint64_t newly = 0;
  while (n > 0) {
    uint64_t word = start / 64, bit = start % 64;
    uint64_t take = std::min<uint64_t>(64 - bit, n);
    uint64_t bits = (take == 64 ? ~0ull : ((1ull << take) - 1)) << bit;
    newly += static_cast<uint64_t>(__builtin_popcountll(bits & ~mask[word]));
    mask[word] |= bits;
    start += take;
    n -= take;
  }
  return newly;
}

// Calls f(first, count) for each maximal run of clear bits below total.
template <typename F>
void ForEachClearRun(const uint64_t* mask, uint64_t total, F f) {
  uint64_t i = 0;
  while (i < total) {
    // Skip set bits a word at a time.
    while (i < total && i % 64 == 0 && mask[i / 64] == ~0ull) i += 64;
    if (i >= total) break;
    if (mask[i / 64] >> (i % 64) & 1) {
      ++i;
      continue;
    }
    uint64_t start = i;
    while (i < total && !(mask[i / 64] >> (i % 64) & 1)) {
      if (i % 64 == 0 && mask[i / 64] == 0 && i + 64 <= total)
        i += 64;
      else
        ++i;
    }
    f(start, i - start);
  }
}

}  // namespace

DatasetState::DatasetState(ContainerImpl* c, ObjectId id, DatasetRecord meta, std::unique_ptr<ChunkIndex> index)
    : c_(c),
      id_(id),
      cache_id_(NextCacheId()),
      meta_(std::move(meta)),
      index_(std::move(index)),
      item_size_(ItemSize(meta_.dtype)) {
  SetShape(meta_.shape);
  format_ = ChunkFormat::ForDataset(item_size_, meta_.fill, meta_.filters, (meta_.flags & kDatasetFlagSparse) != 0);
  defined_ = meta_.defined_elements;
  allocated_chunks_ = meta_.allocated_chunks;
  stored_bytes_ = meta_.stored_bytes;
}

void DatasetState::SetShape(const Dims& shape) {
  meta_.shape = shape;
  uint64_t n = 1;
  grid_.resize(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    n *= shape[d];
    grid_[d] = CeilDiv(shape[d], meta_.chunks[d]);
  }
  num_elements_.store(n, std::memory_order_relaxed);
  size_bytes_.store(n * item_size_.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

uint64_t DatasetState::LinearInGrid(ChunkCoord c) const {
  uint64_t linear = 0;
  for (size_t d = 0; d < c.size(); ++d) linear = linear * grid_[d] + c[d];
  return linear;
}

void DatasetState::CoordsOf(uint64_t linear, uint64_t* c) const {
  for (size_t d = grid_.size(); d-- > 0;) {
    c[d] = linear % grid_[d];
    linear /= grid_[d];
  }
}

void DatasetState::set_path(std::string path) {
  MutexLock lock(path_mu_);
  path_ = std::move(path);
}

std::string DatasetState::what() const {
  MutexLock lock(path_mu_);
  return path_.empty() ? "dataset " + std::to_string(id_) : path_;
}

void DatasetState::AssertCommitExclusive() const { c_->commit_mu().AssertHeld(); }

void DatasetState::MarkGone() {
  AssertCommitExclusive();
  gone_.store(true, std::memory_order_relaxed);
}

Status DatasetState::CheckPresent() const {
  if (gone_.load(std::memory_order_relaxed))
    return Status::NotFound(what() + " is not in the commit the container now reads");
  return Status::OK();
}

Status DatasetState::CheckWritable() const {
  if (c_->read_only()) return Status::ReadOnly(c_->path() + " is open read-only");
  return Status::OK();
}

DatasetInfo DatasetState::Info() const {
  ReaderLock lock(rw_);
  DatasetInfo i;
  i.dtype = meta_.dtype;
  i.shape = meta_.shape;
  i.max_shape = meta_.max_shape;
  i.chunks = meta_.chunks;
  i.fill = meta_.fill;
  i.index = index_->kind();
  i.num_elements = num_elements();
  i.size_bytes = i.num_elements * item_size_;
  i.num_chunks = 1;
  for (uint64_t g : grid_) i.num_chunks *= g;
  i.allocated_chunks = allocated_chunks_;
  i.stored_bytes = stored_bytes_;
  i.index_bytes = index_->disk_bytes();
  i.length_resizable = (meta_.flags & kDatasetFlagLengthResizable) != 0;
  if (!meta_.filters.empty()) i.filters = meta_.filters.ToString();
  i.sparse = format_->tracks_defined();
  i.defined_elements = i.sparse ? defined_ : 0;
  return i;
}

DatasetRecord DatasetState::Record() const {
  ReaderLock lock(rw_);
  DatasetRecord r = meta_;
  r.index = index_->kind();
  r.index_root = index_->EncodeRoot();
  r.allocated_chunks = allocated_chunks_;
  r.stored_bytes = stored_bytes_;
  r.defined_elements = defined_;
  return r;
}

uint64_t DatasetState::BytesOfChunk(ChunkCoord c) const {
  // Chunks are stored trimmed to the maximum shape (see TransferPlan).
  return StoredChunkBytes(meta_, c);
}

uint64_t DatasetState::FileBytesOf(ChunkCoord c, const ChunkRecord& rec) const {
  return index_->geometry().filtered ? rec.size : BytesOfChunk(c);
}

Status DatasetState::CheckExtent(uint64_t addr, uint64_t bytes, uint64_t linear) const {
  uint64_t end = c_->allocator().file_end();
  if (addr < kDataStart || addr > end || end - addr < bytes) {
    uint64_t coords[kMaxRank];
    CoordsOf(linear, coords);
    Status s = Status::Corruption(ChunkWhat(ChunkCoord(coords, grid_.size())) + ": extent at " + std::to_string(addr) +
                                  " lies outside the container");
    LogWarn(s.ToString());
    return s;
  }
  return Status::OK();
}

std::string DatasetState::ChunkWhat(ChunkCoord c) const {
  return what() + " chunk [" + FormatDims(Dims(c.begin(), c.end())) + "]";
}

Status DatasetState::Corrupt(Status s) const {
  if (s.code() == Code::kCorruption) LogWarn(s.ToString());
  return s;
}

// ------------------------------------------------------------------ reads

void DatasetState::AdviseChunk(uint64_t linear, uint64_t addr, uint64_t bytes) {
  // A direct-mapped table of recently advised chunks keeps repeated partial
  // reads of one chunk (a row at a time) from asking again; races only cost
  // an extra hint.
  std::atomic<uint64_t>& slot = advised_[linear % advised_.size()];
  if (slot.load(std::memory_order_relaxed) == linear + 1) return;
  slot.store(linear + 1, std::memory_order_relaxed);
  c_->file()->WillNeed(addr, bytes);
}

Status DatasetState::LoadChunk(ChunkCoord c, const ChunkRecord& rec, uint64_t linear, uint64_t elements, char* mem,
                               uint64_t fill_to) {
  fill_to = std::min(fill_to, elements);
  if (!rec.allocated()) {
    format_->MemFill(mem, fill_to);
    return Status::OK();
  }
  const uint64_t file_bytes = FileBytesOf(c, rec);
  SLABFS_RETURN_IF_ERROR(CheckExtent(rec.addr, file_bytes, linear));
  // A trimmed chunk holds the leading elements of the chunk; the rest are
  // the fill value (engine/chunk/trimmed_edge.h).
  uint64_t stored = elements;
  if (TrimsEdge(meta_)) {
    Status s = CheckTrimmedChunk(meta_, c, file_bytes, rec.filter_mask);
    if (!s.ok()) return Corrupt(s.WithContext(ChunkWhat(c)));
    stored = file_bytes / item_size_;
  }
  Status s = format_->Load(ChunkIo{c_->file(), &c_->cache()}, rec.addr, file_bytes, rec.filter_mask, mem, stored);
  if (!s.ok()) return Corrupt(s.WithContext(ChunkWhat(c)));
  if (stored < fill_to) format_->MemFill(mem + stored * item_size_, fill_to - stored);
  return Status::OK();
}

uint64_t DatasetState::LiveElements(ChunkCoord c) const {
  if (TrimsEdge(meta_)) return TrimmedChunkBytes(meta_, c, meta_.shape[0]) / item_size_;
  return BytesOfChunk(c) / item_size_;
}

void DatasetState::FillGrownEntries(uint64_t old_length, uint64_t new_length) {
  if (!TrimsEdge(meta_) || new_length <= old_length) return;
  const uint64_t row = old_length / meta_.chunks[0];
  // A chunk row that starts at the old end or past it held nothing: none
  // of its chunks can be cached.
  if (old_length % meta_.chunks[0] == 0 || row >= grid_[0]) return;
  ChunkCache& cache = c_->cache();
  const size_t rank = grid_.size();
  uint64_t coords[kMaxRank] = {};
  coords[0] = row;
  for (;;) {
    const ChunkCoord c(coords, rank);
    if (ChunkCache::Entry* e = cache.Peek(CacheKey{cache_id_, LinearInGrid(c)})) {
      const uint64_t live = TrimmedChunkBytes(meta_, c, new_length) / item_size_;
      if (e->filled < live) {
        format_->MemFill(e->data.get() + e->filled * item_size_, live - e->filled);
        e->filled = live;
      }
      cache.Unpin(e);
    }
    size_t d = rank;
    while (--d > 0) {
      if (++coords[d] < grid_[d]) break;
      coords[d] = 0;
    }
    if (d == 0) break;
  }
}

Status DatasetState::LoadEntry(uint64_t linear, uint64_t bytes, std::unique_ptr<char[]>* out, uint64_t fill_to) {
  uint64_t coords[kMaxRank];
  CoordsOf(linear, coords);
  const ChunkCoord c(coords, grid_.size());
  SLABFS_ASSIGN_OR_RETURN(ChunkRecord rec, index_->Get(c));
  *out = c_->cache().TakeBuffer(bytes);
  return LoadChunk(c, rec, linear, BytesOfChunk(c) / item_size_, out->get(), fill_to);
}

Status DatasetState::CompleteEntry(ChunkCache::Entry* e) {
  MutexLock lock(e->merge_mu);
  if (!e->partial.load(std::memory_order_relaxed)) return Status::OK();
  std::unique_ptr<char[]> stored;
  // Past e->filled the entry holds nothing yet, and nothing is read there.
  SLABFS_RETURN_IF_ERROR(LoadEntry(e->key.chunk, e->bytes, &stored, e->filled));
  const uint64_t isz = item_size_;
  char* dst = e->data.get();
  // Only what is materialized is merged: a new file's 1 MiB chunk holding
  // a few bytes was copied whole, for every small file written back.
  ForEachClearRun(e->written.get(), std::min<uint64_t>(e->bytes / isz, e->filled), [&](uint64_t first, uint64_t n) {
    std::memcpy(dst + first * isz, stored.get() + first * isz, n * isz);
  });
  e->written.reset();
  e->unwritten = 0;
  e->partial.store(false, std::memory_order_release);
  return Status::OK();
}

Status DatasetState::ReadLocked(const TransferPlan& plan, char* buf) {
  // Chunks are dealt to stripes round-robin; each stripe walks the plan with
  // its own cursor. Everything a stripe touches is safe for concurrent
  // readers: the cache, the index's Get, positional file reads.
  const size_t stripes = ReadStripes(c_->cache(), cache_id_, plan, item_size_, CodecIsCostly());
  // Each stripe runs under this thread's hold of rw_ (shared), on the pool.
  Status s =
      RunStriped(stripes, [&](size_t w, size_t width) REQUIRES_SHARED(rw_) { return ReadStripe(plan, buf, w, width); });
  c_->cache().EvictToBudget();
  return s;
}

bool DatasetState::CodecIsCostly() const {
  return !format_->direct_io() && (format_->tracks_defined() || meta_.filters.compresses());
}

Status DatasetState::ReadStripe(const TransferPlan& plan, char* buf, size_t stripe, size_t width) {
  ChunkCache& cache = c_->cache();
  const uint64_t isz = item_size_;
  uint64_t ordinal = 0;
  for (ChunkCursor cur(plan); !cur.done(); cur.Next(), ++ordinal) {
    if (ordinal % width != stripe) continue;
    const CacheKey key{cache_id_, cur.linear()};
    const uint64_t used = cur.selected() * isz;
    ChunkCache::Entry* e = cache.Lookup(key);
    if (!e) {
      SLABFS_ASSIGN_OR_RETURN(ChunkRecord rec, index_->Get(cur.coords()));
      if (!rec.allocated()) {
        format_->FillSelected(cur, buf);
        continue;
      }
      const uint64_t elements = cur.chunk_elements();
      // A dense chunk that partial reads come back to, or read across most
      // of it, is loaded whole into the cache, like a filtered one, and
      // later reads of it are served from memory; a streaming pass goes
      // straight from the file. So is a read that reaches past what a
      // trimmed chunk stores (the dataset grew since it was written).
      bool direct = format_->direct_io() && (cur.covers_chunk() || !CachePartialRead(cache, key, cur));
      const uint64_t bytes = FileBytesOf(cur.coords(), rec);
      if (direct && TrimsEdge(meta_) && bytes != elements * isz) {
        Status s = CheckTrimmedChunk(meta_, cur.coords(), bytes, rec.filter_mask);
        if (!s.ok()) return Corrupt(s.WithContext(ChunkWhat(cur.coords())));
        direct = RunsEndWithin(cur, bytes / isz);
      }
      if (direct) {
        SLABFS_RETURN_IF_ERROR(CheckExtent(rec.addr, bytes, cur.linear()));
        // A dense chunk is read straight from the file into the caller's
        // buffer, whole or in part: the operating system's page cache
        // already holds the file, and loading the chunk into the chunk cache
        // first would copy every byte twice. The first partial read of a
        // chunk asks the kernel to read all of it ahead, so a cold file is
        // still read chunk by chunk, not in scattered pages.
        if (!cur.covers_chunk()) AdviseChunk(cur.linear(), rec.addr, bytes);
        Status s = format_->FileRead(ChunkIo{c_->file(), &cache}, rec.addr, cur, buf);
        if (!s.ok()) return s.WithContext(ChunkWhat(cur.coords()));
        continue;
      }
      // Any other chunk is loaded (and decoded) whole into the cache
      // (stripes decode their chunks on several cores at once), once
      // however many readers want it at the same time.
      ChunkCache::Claim claim;
      e = cache.ClaimLoad(key, &claim);
      if (!e) {
        std::unique_ptr<char[]> data = cache.TakeBuffer(format_->MemBytes(elements));
        SLABFS_RETURN_IF_ERROR(LoadChunk(cur.coords(), rec, cur.linear(), elements, data.get()));
        e = claim.Fill(std::move(data), format_->MemBytes(elements));
      }
    }
    if (e->partial.load(std::memory_order_acquire)) {
      // Partly overwritten without being read: bring in the rest first.
      Status s = CompleteEntry(e);
      if (!s.ok()) {
        cache.Release(e, 0);
        return s;
      }
    }
    format_->MemRead(e->data.get(), cur, buf);
    cache.Release(e, used);
    // Keep memory bounded within one large transfer, not only after it.
    if (cache.over_budget()) cache.EvictToBudget();
  }
  return Status::OK();
}

Status DatasetState::Read(const Slab& sel, void* buf, const MemSpace* mem) {
  ReaderLock cl(c_->commit_mu());
  SLABFS_RETURN_IF_ERROR(CheckPresent());
  ReaderLock lock(rw_);
  // One plan per thread, reused: small reads (windows) then allocate
  // nothing for it. Nothing below calls Read again on this thread.
  thread_local TransferPlan plan;
  SLABFS_RETURN_IF_ERROR(plan.Build(meta_.shape, meta_.chunks, sel, mem, &meta_.max_shape));
  return ReadLocked(plan, static_cast<char*>(buf));
}

// ----------------------------------------------------------------- writes

uint64_t DatasetState::ReserveChunk(ChunkCoord coords, const ChunkRecord& rec, uint64_t bytes) {
  Allocator& alloc = c_->allocator();
  // An extent allocated since the last commit is in no committed state, so
  // it can be overwritten in place while the chunk still fills it exactly;
  // anything older is copied on write.
  if (rec.allocated() && alloc.IsFresh(rec.addr) && FileBytesOf(coords, rec) == bytes) return rec.addr;
  // Fixed-size chunks are page-aligned for direct partial I/O; variable ones
  // are always read whole and packed close.
  return alloc.Allocate(bytes, !format_->variable_size() && bytes >= Allocator::kPageAlign ? Allocator::kPageAlign
                                                                                           : Allocator::kPackedAlign);
}

Status DatasetState::SettleChunk(ChunkCoord coords, const ChunkRecord& rec, uint64_t dest, uint64_t bytes,
                                 uint32_t filter_mask) {
  ChunkRecord next{0};
  next.addr = dest;
  if (index_->geometry().filtered) {  // records that hold sizes (filtered, sparse, trimmed)
    next.size = static_cast<uint32_t>(bytes);
    next.filter_mask = filter_mask;
  }
  if (rec.allocated() && dest == rec.addr) {  // rewritten in place
    if (next != rec) SLABFS_RETURN_IF_ERROR(index_->Put(coords, next));
    return Status::OK();
  }
  Status s = index_->Put(coords, next);
  if (!s.ok()) {
    c_->allocator().Free(dest, bytes);
    return s;
  }
  if (rec.allocated()) {
    const uint64_t old_bytes = FileBytesOf(coords, rec);
    c_->allocator().Free(rec.addr, old_bytes);
    stored_bytes_.fetch_sub(old_bytes, std::memory_order_relaxed);
  } else {
    allocated_chunks_.fetch_add(1, std::memory_order_relaxed);
  }
  stored_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  header_dirty_ = true;
  return Status::OK();
}

void DatasetState::AbandonChunk(const ChunkRecord& rec, uint64_t dest, uint64_t bytes) {
  if (!rec.allocated() || dest != rec.addr) c_->allocator().Free(dest, bytes);
}

Status DatasetState::StoreChunkImage(ChunkCoord coords, const ChunkRecord& rec, const FileImage& img) {
  const uint64_t dest = ReserveChunk(coords, rec, img.bytes.size());
  Status s = c_->file()->WriteAt(dest, img.bytes.data(), img.bytes.size());
  if (!s.ok()) {
    // The index still names the chunk's old extent, untouched (unless it
    // was rewritten in place: then it held data of no commit).
    AbandonChunk(rec, dest, img.bytes.size());
    return s.WithContext(ChunkWhat(coords));
  }
  SLABFS_RETURN_IF_ERROR(SettleChunk(coords, rec, dest, img.bytes.size(), img.filter_mask));
  c_->cache().CountBytesWritten(img.bytes.size());
  return Status::OK();
}

Result<ChunkCache::Entry*> DatasetState::NewEntry(const ChunkCursor& cur, const ChunkRecord& rec, bool whole) {
  ChunkCache& cache = c_->cache();
  const uint64_t n = cur.chunk_elements();
  const uint64_t bytes = format_->MemBytes(n);
  std::unique_ptr<char[]> data = cache.TakeBuffer(bytes);
  bool partial = false;
  // Where edge chunks are trimmed, only the elements inside the dataset's
  // length are filled now (a new small file does not zero a whole chunk);
  // the rest when it grows over them (FillGrownEntries).
  const uint64_t live = whole ? n : LiveElements(cur.coords());
  if (whole) {
    // Every element is overwritten: nothing is read; a defined set starts
    // empty and the write fills it.
    if (format_->tracks_defined()) format_->MemFill(data.get(), n);
  } else if (!rec.allocated()) {
    format_->MemFill(data.get(), live);
  } else if (!format_->tracks_defined()) {
    // Write without read: the stored chunk is merged in only if an
    // unwritten element is read, or the chunk is written back, before later
    // writes have covered it all.
    partial = true;
  } else {
    // A defined set cannot be merged afterwards: load it now.
    SLABFS_RETURN_IF_ERROR_R(LoadChunk(cur.coords(), rec, cur.linear(), n, data.get()));
  }
  ChunkCache::Entry* e = cache.Insert(CacheKey{cache_id_, cur.linear()}, std::move(data), bytes, true);
  if (live < n) e->filled = live;
  if (partial) {
    e->written.reset(new uint64_t[(n + 63) / 64]());
    e->unwritten = n;
    e->partial.store(true, std::memory_order_release);
  }
  return e;
}

void DatasetState::FreeChunk(ChunkCoord c, const ChunkRecord& rec, uint64_t defined) {
  const uint64_t bytes = FileBytesOf(c, rec);
  c_->allocator().Free(rec.addr, bytes);
  allocated_chunks_.fetch_sub(1, std::memory_order_relaxed);
  stored_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
  if (format_->tracks_defined()) defined_ -= defined;
  header_dirty_ = true;
}

Result<uint64_t> DatasetState::StoredDefinedOf(ChunkCoord c, const ChunkRecord& rec) const {
  if (!rec.allocated()) return uint64_t{0};
  auto d = format_->StoredDefined(ChunkIo{c_->file(), &c_->cache()}, rec.addr, FileBytesOf(c, rec),
                                  BytesOfChunk(c) / item_size_);
  if (!d) return Err(Corrupt(d.error().WithContext(ChunkWhat(c))));
  return *d;
}

uint64_t DatasetState::ElementsOf(const ChunkCache::Entry* e) const {
  uint64_t coords[kMaxRank];
  CoordsOf(e->key.chunk, coords);
  return BytesOfChunk(ChunkCoord(coords, grid_.size())) / item_size_;
}

Status DatasetState::StoreImage(ChunkCache::Entry* e, const FileImage& img) {
  uint64_t coords[kMaxRank];
  CoordsOf(e->key.chunk, coords);
  const ChunkCoord c(coords, grid_.size());
  SLABFS_ASSIGN_OR_RETURN(ChunkRecord rec, index_->Get(c));
  uint64_t before = 0;
  if (format_->tracks_defined()) {
    SLABFS_ASSIGN_OR_RETURN(before, StoredDefinedOf(c, rec));
  }
  if (img.bytes.empty()) {
    // Nothing left to store (a sparse chunk with no defined element).
    if (rec.allocated()) {
      SLABFS_RETURN_IF_ERROR(index_->Put(c, ChunkRecord{}));
      FreeChunk(c, rec, before);
    }
    c_->cache().MarkClean(e);
    return Status::OK();
  }
  FileImage stored = img;
  // Only the steps of the first dimension inside the dataset are stored.
  if (TrimsEdge(meta_)) stored.bytes = img.bytes.substr(0, TrimmedChunkBytes(meta_, c, meta_.shape[0]));
  SLABFS_RETURN_IF_ERROR(StoreChunkImage(c, rec, stored));
  if (format_->tracks_defined()) {
    defined_ += img.defined - before;
    header_dirty_ = true;
  }
  c_->cache().MarkClean(e);
  return Status::OK();
}

void DatasetState::LoseEntry(ChunkCache::Entry* e, const Status& why) {
  uint64_t coords[kMaxRank];
  CoordsOf(e->key.chunk, coords);
  Status lost = why.WithContext("writes to " + ChunkWhat(ChunkCoord(coords, grid_.size())) +
                                " were lost: they cover part of it, and the rest cannot be read");
  LogWarn(lost.ToString());
  if (lost_writes_.ok()) lost_writes_ = lost;
  c_->cache().Drop(e);
}

Status DatasetState::WriteBackEntries(std::vector<ChunkCache::Entry*> dirty) {
  // In chunk order: chunks placed anew go to the file in the order of the
  // dataset, and rewritten ones are visited in the order they lie.
  std::sort(dirty.begin(), dirty.end(),
            [](const ChunkCache::Entry* a, const ChunkCache::Entry* b) { return a->key.chunk < b->key.chunk; });
  // A partly written entry whose stored chunk is damaged cannot be merged:
  // it is dropped (LoseEntry) and its writes are reported by
  // TakeLostWrites, so that one damaged chunk does not stop every commit.
  // Any other error stops the write-back.
  ChunkCache& cache = c_->cache();
  Status s;
  if (!format_->variable_size() || dirty.size() < 2 || !CodecIsCostly()) {
    for (ChunkCache::Entry* e : dirty) {
      Status merged = s.ok() ? CompleteEntry(e) : Status::OK();
      if (merged.code() == Code::kCorruption) {
        LoseEntry(e, merged);
        continue;
      }
      if (s.ok()) s = merged;
      std::string scratch;
      if (s.ok()) s = StoreImage(e, format_->MemToFile(e->data.get(), ElementsOf(e), &scratch));
      cache.Release(e, 0);  // every entry is released, even after an error
    }
    return s;
  }
  // Encoding (compression) is the costly part: a batch of chunks is encoded
  // on every core, then placed and written in order by this thread, which
  // alone changes the index and the allocator. (Cheap codecs are encoded
  // above, on this thread: CodecIsCostly.)
  // A batch holds at most 4 chunks per core and, unless one chunk is
  // larger, kMaxEncodeBatchBytes of them: their images are all in memory.
  const size_t max_batch = 4 * ParallelWidth();
  for (size_t first = 0, n = 0; first < dirty.size(); first += n) {
    uint64_t bytes = 0;
    for (n = 0; first + n < dirty.size() && n < max_batch && (n == 0 || bytes < kMaxEncodeBatchBytes); ++n)
      bytes += dirty[first + n]->bytes;
    std::vector<std::string> scratch(n);
    std::vector<FileImage> images(n);
    std::vector<Status> merged(n);
    if (s.ok()) {
      // Under this thread's hold of rw_, on the pool: merges (under each
      // entry's merge_mu) and encodes, reading the layout only.
      ParallelFor(n, [&](size_t i) REQUIRES_SHARED(rw_) {
        ChunkCache::Entry* e = dirty[first + i];
        merged[i] = CompleteEntry(e);
        if (merged[i].ok()) images[i] = format_->MemToFile(e->data.get(), ElementsOf(e), &scratch[i]);
      });
    }
    for (size_t i = 0; i < n; ++i) {
      ChunkCache::Entry* e = dirty[first + i];
      if (merged[i].code() == Code::kCorruption) {
        LoseEntry(e, merged[i]);
        continue;
      }
      if (s.ok()) s = merged[i];
      if (s.ok()) s = StoreImage(e, images[i]);
      cache.Release(e, 0);
    }
  }
  return s;
}

Status DatasetState::TakeLostWrites() {
  WriterLock lock(rw_);
  return std::exchange(lost_writes_, Status::OK());
}

void DatasetState::WriteBehind() {
  ChunkCache& cache = c_->cache();
  std::vector<ChunkCache::Entry*> finished = cache.FinishedDirty(cache_id_);
  if (finished.empty()) return;
  std::vector<CacheKey> keys;
  keys.reserve(finished.size());
  for (const ChunkCache::Entry* e : finished) keys.push_back(e->key);
  Status s = WriteBackEntries(std::move(finished));
  if (!s.ok()) {
    // The chunks stay dirty in the cache and the commit stores them, or
    // reports why it cannot: the write that got here has its bytes in, so
    // it does not fail for an early store of others.
    LogWarn(what() + ": write-behind failed, left to the commit: " + s.ToString());
  }
  cache.EvictStored(keys);
}

Status DatasetState::ShedDirty() {
  ChunkCache& cache = c_->cache();
  // Clean entries go first; then dirty ones, those the application is done
  // with before any still being filled (see ChunkCache::ShedCandidates).
  cache.EvictToBudget();
  while (cache.over_budget()) {
    std::vector<ChunkCache::Entry*> dirty = cache.ShedCandidates(cache_id_, 4 * ParallelWidth());
    if (dirty.empty()) break;
    SLABFS_RETURN_IF_ERROR(WriteBackEntries(dirty));
    cache.EvictToBudget();
  }
  return Status::OK();
}

void DatasetState::ShedAfterChange() {
  Status s = ShedDirty();
  if (!s.ok()) LogWarn(what() + ": shedding dirty chunks failed, left for later: " + s.ToString());
  c_->cache().EvictToBudget();
}

Status DatasetState::CheckRoomForChunks(uint64_t touched) {
  // Every chunk touched is counted whole, at its largest stored size.
  const uint64_t isz = item_size_;
  uint64_t chunk_bytes = isz;
  for (uint64_t c : meta_.chunks) chunk_bytes *= c;
  if (format_->variable_size()) chunk_bytes = std::max(chunk_bytes, format_->MaxFileBytes(chunk_bytes / isz));
  return c_->CheckRoomForChanges(chunk_bytes != 0 && touched > UINT64_MAX / chunk_bytes ? UINT64_MAX
                                                                                        : touched * chunk_bytes);
}

Status DatasetState::WriteLocked(const TransferPlan& plan, const char* buf, bool room_checked) {
  ChunkCache& cache = c_->cache();
  const uint64_t isz = item_size_;
  // Refused before anything changes if the changes could not be stored, or
  // if the dirty chunks left over budget cannot be shed.
  if (!room_checked) {
    SLABFS_RETURN_IF_ERROR(CheckRoomForChunks(plan.chunks_touched()));
    SLABFS_RETURN_IF_ERROR(MakeRoom());
  }
  c_->NoteDirty(id_);
  // First pass, in order: chunks in the cache, or partly written, are
  // updated in the cache; whole chunks not in the cache get their place in
  // the file now (the index is changed only here, by this thread).
  // Whole chunks written straight from the buffer: ordinal -> where they
  // go (dest 0: not direct). Each is linked into the index only once its
  // bytes are in the file, so a failed write (a full disk) leaves the
  // chunk as it was.
  struct Direct {
    uint64_t dest = 0;
    ChunkRecord old;
  };
  std::vector<Direct> direct;
  bool any_direct = false;
  bool any_finished = false;
  uint64_t ordinal = 0;
  for (ChunkCursor cur(plan); !cur.done(); cur.Next(), ++ordinal) {
    const CacheKey key{cache_id_, cur.linear()};
    const uint64_t used = cur.selected() * isz;
    ChunkCache::Entry* e = cache.Lookup(key);
    if (!e) {
      SLABFS_ASSIGN_OR_RETURN(ChunkRecord rec, index_->Get(cur.coords()));
      const uint64_t bytes = format_->MemBytes(cur.chunk_elements());
      if (rec.allocated()) SLABFS_RETURN_IF_ERROR(CheckExtent(rec.addr, FileBytesOf(cur.coords(), rec), cur.linear()));
      if (format_->direct_io() && cur.covers_chunk() && cur.num_runs() <= kMaxDirectRuns) {
        // A whole chunk is overwritten: it is never read, and goes from the
        // caller's buffer to the file in one gather write (second pass).
        if (direct.empty()) direct.resize(plan.chunks_touched());
        direct[ordinal] = Direct{ReserveChunk(cur.coords(), rec, bytes), rec};
        any_direct = true;
        continue;
      }
      SLABFS_ASSIGN_OR_RETURN(e, NewEntry(cur, rec, cur.covers_chunk()));
    } else {
      cache.MarkDirty(e);
    }
    char* dst = e->data.get();
    if (e->partial.load(std::memory_order_relaxed)) {
      uint64_t* mask = e->written.get();
      cur.ForEachRun([&](uint64_t co, uint64_t mo, uint64_t n) {
        std::memcpy(dst + co * isz, buf + mo * isz, n * isz);
        e->unwritten -= SetBits(mask, co, n);
      });
      if (e->unwritten == 0) {  // every element written: nothing to merge
        e->written.reset();
        e->partial.store(false, std::memory_order_release);
      }
    } else {
      format_->MemWrite(dst, cur.chunk_elements(), cur, buf);
    }
    const auto [lo, hi] = cur.span();
    any_finished |= cache.ReleaseWritten(e, used, cur.selected(), lo, hi, cur.chunk_elements());
  }
  // Second pass: the gather writes, spread over cores; every one is tried.
  // Third, in order: each chunk written is linked into the index, and the
  // extent of each that failed is given back.
  if (any_direct) {
    std::vector<uint8_t> failed(direct.size(), 0);
    // Under this thread's hold of rw_, on the pool: only reads the layout.
    Status first_error =
        RunStriped(WriteStripes(plan, isz), [&](size_t w, size_t width) REQUIRES_SHARED(rw_) -> Status {
          Status err;
          uint64_t ord = 0;
          for (ChunkCursor cur(plan); !cur.done(); cur.Next(), ++ord) {
            if (ord % width != w || direct[ord].dest == 0) continue;
            Status s = format_->FileWrite(ChunkIo{c_->file(), &cache}, direct[ord].dest, cur, buf);
            if (!s.ok()) {
              failed[ord] = 1;
              if (err.ok()) err = s.WithContext(ChunkWhat(cur.coords()));
            }
          }
          return err;
        });
    uint64_t ord = 0;
    for (ChunkCursor cur(plan); !cur.done(); cur.Next(), ++ord) {
      const Direct& d = direct[ord];
      if (d.dest == 0) continue;
      const uint64_t bytes = format_->MemBytes(cur.chunk_elements());
      if (failed[ord]) {
        AbandonChunk(d.old, d.dest, bytes);
        continue;
      }
      Status s = SettleChunk(cur.coords(), d.old, d.dest, bytes, 0);
      if (!s.ok() && first_error.ok()) first_error = s;
    }
    SLABFS_RETURN_IF_ERROR(first_error);
  }
  // Only a write that finished a chunk can bring the finished ones to the
  // write-behind window.
  if (any_finished) WriteBehind();
  ShedAfterChange();
  return Status::OK();
}

Status DatasetState::Write(const Slab& sel, const void* buf, const MemSpace* mem) {
  SLABFS_RETURN_IF_ERROR(CheckWritable());
  ReaderLock cl(c_->commit_mu());
  WriterLock lock(rw_);
  TransferPlan plan;
  SLABFS_RETURN_IF_ERROR(plan.Build(meta_.shape, meta_.chunks, sel, mem, &meta_.max_shape));
  return WriteLocked(plan, static_cast<const char*>(buf));
}

// ---------------------------------------------------- whole-dataset ops

Status DatasetState::Clear() {
  SLABFS_RETURN_IF_ERROR(CheckWritable());
  ReaderLock cl(c_->commit_mu());
  WriterLock lock(rw_);
  c_->NoteDirty(id_);
  return Reclaim();
}

Status DatasetState::ReclaimDetached() {
  AssertCommitExclusive();
  WriterLock lock(rw_);
  return Reclaim();
}

Status DatasetState::Reclaim() {
  c_->cache().EraseDataset(cache_id_);
  Allocator& alloc = c_->allocator();
  SLABFS_RETURN_IF_ERROR(index_->ForEach([&](ChunkCoord c, const ChunkRecord& rec) REQUIRES(rw_) {
    alloc.Free(rec.addr, FileBytesOf(c, rec));
    return Status::OK();
  }));
  SLABFS_RETURN_IF_ERROR(index_->Destroy());
  allocated_chunks_ = 0;
  stored_bytes_ = 0;
  defined_ = 0;
  header_dirty_ = true;
  return Status::OK();
}

Result<std::vector<StoredChunk>> DatasetState::StoredChunks() {
  ReaderLock cl(c_->commit_mu());
  SLABFS_RETURN_IF_ERROR_R(CheckPresent());
  WriterLock lock(rw_);
  if (!c_->read_only()) SLABFS_RETURN_IF_ERROR_R(WriteBackEntries(c_->cache().DirtyEntries(cache_id_)));
  std::vector<StoredChunk> out;
  SLABFS_RETURN_IF_ERROR_R(index_->ForEach([&](ChunkCoord c, const ChunkRecord& rec) REQUIRES(rw_) {
    out.push_back(StoredChunk{Dims(c.begin(), c.end()), rec.addr, FileBytesOf(c, rec), rec.filter_mask});
    return Status::OK();
  }));
  return out;
}

Result<bool> DatasetState::FlushForCommit() {
  AssertCommitExclusive();
  WriterLock lock(rw_);
  SLABFS_RETURN_IF_ERROR_R(WriteBackEntries(c_->cache().DirtyEntries(cache_id_)));
  bool changed = header_dirty_ || index_->dirty();
  SLABFS_RETURN_IF_ERROR_R(index_->Flush());
  header_dirty_ = false;
  return changed;
}

bool DatasetState::HasUnflushedChanges() {
  AssertCommitExclusive();
  WriterLock lock(rw_);
  return header_dirty_ || index_->dirty() || !c_->cache().DirtyEntries(cache_id_).empty();
}

}  // namespace slabfs::engine
