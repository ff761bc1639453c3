// The engine behind slabfs::Container and slabfs::Dataset.
//
// Lock order: engine/util/lock_order.h lists every mutex of the engine in
// the order a thread takes them (commit_mu_, ns_mu_, a dataset's rw_, then
// the locks inside the cache, the index and the allocator), says which may
// be held across I/O, and checks the order in debug and sanitizer builds.
// The members below say which mutex guards them (GUARDED_BY), and the
// *Locked methods which one the caller holds (REQUIRES), for clang's
// -Wthread-safety (engine/util/thread_annotations.h).
#ifndef SLABFS_ENGINE_CONTAINER_IMPL_H_
#define SLABFS_ENGINE_CONTAINER_IMPL_H_

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/cache/chunk_cache.h"
#include "engine/chunk/chunk_format.h"
#include "engine/format/object.h"
#include "engine/format/superblock.h"
#include "engine/index/chunk_index.h"
#include "engine/io/file.h"
#include "engine/selection/hyperslab.h"
#include "engine/space/allocator.h"
#include "engine/space/dirty_room.h"
#include "engine/txn/block_store.h"
#include "engine/txn/free_list_log.h"
#include "engine/txn/group_pages.h"
#include "engine/txn/newest_state.h"
#include "engine/txn/reader_table.h"
#include "engine/util/log.h"
#include "engine/util/mutex.h"
#include "engine/util/name_map.h"
#include "engine/util/thread_annotations.h"
#include "slabfs/container.h"

namespace slabfs::engine {

class ContainerImpl;

// One dataset's live state: geometry, index, counters. Shared by the
// container's object tree and every Dataset handle.
//
// Thread safety: the public methods take the locks they need: commit_mu_
// shared, then rw_ (shared to read, exclusive to change). The layout and
// contents (meta_, index_, format_, ...) are guarded by rw_; item_size(),
// num_elements(), size_bytes() and stored_bytes() are atomics any thread may
// read without a lock (each alone is consistent; they change under rw_).
class DatasetState {
 public:
  DatasetState(ContainerImpl* c, ObjectId id, DatasetRecord meta, std::unique_ptr<ChunkIndex> index);

  ObjectId id() const { return id_; }
  ContainerImpl* container() const { return c_; }
  DatasetInfo Info() const;
  size_t item_size() const { return item_size_.load(std::memory_order_relaxed); }
  uint64_t num_elements() const { return num_elements_.load(std::memory_order_relaxed); }
  // Elements x item size, as one value: a relayout changes both.
  uint64_t size_bytes() const { return size_bytes_.load(std::memory_order_relaxed); }
  uint64_t stored_bytes() const { return stored_bytes_.load(std::memory_order_relaxed); }

  Status Read(const Slab& sel, void* buf, const MemSpace* mem);
  Status Write(const Slab& sel, const void* buf, const MemSpace* mem);
  Status ReadElements(uint64_t first, uint64_t count, void* buf);
  Status WriteElements(uint64_t first, uint64_t count, const void* buf);
  Result<size_t> ReadBytes(uint64_t offset, size_t length, void* buf);
  // See Dataset::WithFileExtents (engine/file_extents.cc).
  Result<bool> WithFileExtents(uint64_t offset, size_t length, size_t max_extents, const Dataset::FileExtentUser& use);
  // With grow, a write past the end grows the first dimension (if it can)
  // by whole rows to hold it; if the write then fails, the growth is taken
  // back.
  // With `written`, a write reaching past the largest size it may reach
  // writes what fits and sets *written to its length (Dataset::WriteBytesUpTo);
  // without, such a write changes nothing.
  Status WriteBytes(uint64_t offset, size_t length, const void* buf, bool grow, size_t* written = nullptr);
  Status Clear();
  Status Resize(const Dims& shape);
  // The mount's truncate: a whole number of rows of a dataset whose first
  // dimension can change.
  Status SetSizeBytes(uint64_t size);
  Result<std::vector<StoredChunk>> StoredChunks();
  Result<std::vector<Box>> Defined(const Slab& sel);
  Result<std::vector<ElementRun>> DefinedRuns(uint64_t first, uint64_t count);
  Status ForEachDefinedRun(uint64_t first, uint64_t count, const Dataset::RunVisitor& fn,
                           const Dataset::WalkCheck& check);
  Result<uint64_t> CountDefined(const Dataset::WalkCheck& check = {});
  Status Erase(const Slab& sel);
  // See Dataset::WriteEncodedChunk (engine/encoded_chunk.cc).
  Status WriteEncodedChunk(ChunkCoord coords, std::string_view image, uint32_t filter_mask);
  // The first write lost since the last call (see Dataset::TakeLostWrites).
  Status TakeLostWrites();
  // Gives the dataset the layout of `rec` holding the same byte image (see
  // Dataset::Relayout; engine/relayout.cc).
  Status Relayout(DatasetRecord rec);

  // Commit support; the caller holds commit_mu_ exclusively (checked where
  // the lock order is: see AssertCommitExclusive). Each takes rw_.
  // Writes back dirty chunks and index pages; true when the header changed.
  Result<bool> FlushForCommit();
  // Whether anything is left for FlushForCommit to write (a check of
  // ContainerImpl::NoteDirty's promise where ExpensiveChecks()).
  bool HasUnflushedChanges();
  DatasetRecord Record() const;
  // Frees every chunk and index block: the dataset was cleared (under
  // rw_), or it was removed and no handle remains (the container takes
  // rw_ for it, or the state is private to the caller).
  Status Reclaim() REQUIRES(rw_);
  // Reclaim of a removed dataset that no handle uses (the container's
  // commit and close): takes rw_.
  Status ReclaimDetached() EXCLUDES(rw_);
  bool detached() const { return detached_.load(std::memory_order_acquire); }
  void set_detached() { detached_.store(true, std::memory_order_release); }

  // Refresh support (read-only containers); the caller holds commit_mu_
  // exclusively. Takes the layout and contents `fresh` was loaded with
  // (handles see them at once) and drops the cached chunks of the old ones.
  void ReplaceContents(DatasetState& fresh) EXCLUDES(rw_);
  // The dataset is not in the commit the container moved to: every
  // operation answers NotFound from now on. The caller holds commit_mu_
  // exclusively, so no operation is between its check and its end.
  void MarkGone();
  // The dataset's path, for messages ("/run/temp: dimension 0 cannot
  // grow"): set when the container hands the state out (CreateDataset,
  // OpenDataset) and when the dataset itself is renamed; after a rename of
  // a group above it, messages name the old path until the next open.
  void set_path(std::string path);
  std::string what() const;  // the path, or "dataset 12" before one is set

 private:
  Status ReadLocked(const TransferPlan& plan, char* buf) REQUIRES_SHARED(rw_);
  // Calls fn(plan, byte offset in the caller's buffer) for each box of
  // elements [first, first+count); a range outside the dataset is an error
  // with code out_of_range.
  Status ForEachLinearBox(uint64_t first, uint64_t count, Code out_of_range,
                          const std::function<Status(const TransferPlan&, uint64_t)>& fn) REQUIRES_SHARED(rw_);
  Status ReadElementsLocked(uint64_t first, uint64_t count, char* buf) REQUIRES_SHARED(rw_);
  Status WriteElementsLocked(uint64_t first, uint64_t count, const char* buf) REQUIRES(rw_);
  Status ResizeLocked(const Dims& shape) REQUIRES(rw_);
  // Rewrites a stored chunk that the new shape cuts, with the fill value
  // in place of every element outside it.
  Status FillPastEnd(ChunkCoord coords, const ChunkRecord& rec, const Dims& shape) REQUIRES(rw_);
  // Sets meta_.shape and what follows from it.
  void SetShape(const Dims& shape) REQUIRES(rw_);
  // Grid coordinates of a chunk from its position in the current grid (the
  // cache's key).
  void CoordsOf(uint64_t linear, uint64_t* coords) const REQUIRES_SHARED(rw_);
  // The inverse: a chunk's position in the current grid.
  uint64_t LinearInGrid(ChunkCoord coords) const REQUIRES_SHARED(rw_);
  // Elements in one step of the first dimension.
  uint64_t RowElements() const REQUIRES_SHARED(rw_);
  // The chunks of the plan whose ordinal is stripe modulo width.
  Status ReadStripe(const TransferPlan& plan, char* buf, size_t stripe, size_t width) REQUIRES_SHARED(rw_);
  // room_checked: the caller already asked CheckRoomForChunks for this
  // plan's chunks (a write of several boxes asks once for all of them).
  Status WriteLocked(const TransferPlan& plan, const char* buf, bool room_checked = false) REQUIRES(rw_);
  // NoSpace unless changes to `touched` whole chunks could be stored
  // (ContainerImpl::CheckRoomForChanges).
  Status CheckRoomForChunks(uint64_t touched) REQUIRES_SHARED(rw_);

 public:
  // Appends every extent the dataset references: index blocks and stored
  // chunks (engine/rebuild_free_list.cc).
  Status CollectExtents(std::vector<Extent>* out) EXCLUDES(rw_);

 private:
  // The memory chunk (of `elements`) of a chunk from its record: the fill
  // value if unallocated, else its file chunk loaded through the format.
  // `linear` is its position in the current grid, for messages.
  // Elements past `fill_to` that the file does not hold are left as they
  // are rather than given the fill value (a trimmed-edge chunk cached only
  // up to the dataset's end, LiveElements).
  Status LoadChunk(ChunkCoord c, const ChunkRecord& rec, uint64_t linear, uint64_t elements, char* mem,
                   uint64_t fill_to = UINT64_MAX) REQUIRES_SHARED(rw_);
  // The elements of the chunk at c inside the dataset's length: a prefix of
  // it where edge chunks are trimmed (trimmed_edge.h), else all of them.
  uint64_t LiveElements(ChunkCoord c) const REQUIRES_SHARED(rw_);
  // Before the first dimension grows from `old_length` to `new_length`
  // (where edge chunks are trimmed): the cached chunks the growth reaches
  // into get the fill value over what it makes visible (Entry::filled).
  void FillGrownEntries(uint64_t old_length, uint64_t new_length) REQUIRES(rw_);
  // A new buffer of `bytes` holding the memory chunk at `linear`.
  Status LoadEntry(uint64_t linear, uint64_t bytes, std::unique_ptr<char[]>* out, uint64_t fill_to = UINT64_MAX)
      REQUIRES_SHARED(rw_);
  // Starts read-ahead of a chunk's extent, once in a while per chunk.
  void AdviseChunk(uint64_t linear, uint64_t addr, uint64_t bytes);
  // Merges the stored chunk into a partly written entry (write without
  // read); a no-op for complete entries. Safe with concurrent readers.
  Status CompleteEntry(ChunkCache::Entry* e) REQUIRES_SHARED(rw_);
  // Drops a partly written entry whose stored chunk cannot be read, and
  // records its writes as lost.
  void LoseEntry(ChunkCache::Entry* e, const Status& why) REQUIRES(rw_);
  // A pinned, dirty cache entry for changing the chunk at the cursor (not in
  // the cache; `rec` is its record): the fill value if never stored; not
  // read at all if `whole` is overwritten; else loaded, or, for dense
  // chunks, left partial (write without read).
  Result<ChunkCache::Entry*> NewEntry(const ChunkCursor& cur, const ChunkRecord& rec, bool whole) REQUIRES(rw_);
  // Frees a stored chunk whose record was already cleared; `defined` is
  // how many elements it held (sparse).
  void FreeChunk(ChunkCoord c, const ChunkRecord& rec, uint64_t defined) REQUIRES(rw_);
  // The defined elements of a stored chunk (0 if not stored), from its
  // header (sparse formats).
  Result<uint64_t> StoredDefinedOf(ChunkCoord c, const ChunkRecord& rec) const REQUIRES_SHARED(rw_);
  // Writes back dirty entries so the index answers for every chunk.
  Status WriteBackForQuery() REQUIRES(rw_);
  // Appends the defined boxes inside [lo, hi) (chunk by chunk).
  Status DefinedInBox(const Dims& lo, const Dims& hi, std::vector<Box>* out) REQUIRES_SHARED(rw_);
  // Appends the defined boxes of one stored chunk inside [lo, hi), merged
  // (engine/dataset_defined.cc). *scratch holds a chunk's defined set when
  // it is not in the cache.
  struct DefinedScratch;
  Status AppendChunkDefined(ChunkCoord c, const ChunkRecord& rec, const Dims& lo, const Dims& hi,
                            DefinedScratch* scratch, std::vector<Box>* out) REQUIRES_SHARED(rw_);
  // ForEachDefinedRun under the locks, after the write-back.
  Status WalkDefinedLocked(uint64_t first, uint64_t count, const Dataset::RunVisitor& fn,
                           const Dataset::WalkCheck& check) REQUIRES_SHARED(rw_);
  // Erase's work on the chunk at the cursor (the plan's one chunk or one
  // of many).
  Status EraseAt(const ChunkCursor& cur) REQUIRES(rw_);
  // Erase of a selection whose chunk grid is far larger than what is
  // stored: the chunks visited are the stored and the cached ones.
  Status EraseStoredIn(const Slab& sel) REQUIRES(rw_);
  // Elements of the chunk a cache entry holds.
  uint64_t ElementsOf(const ChunkCache::Entry* e) const REQUIRES_SHARED(rw_);
  // Stores the file image of a dirty cache entry and marks it clean (an
  // empty image frees the chunk).
  Status StoreImage(ChunkCache::Entry* e, const FileImage& img) REQUIRES(rw_);
  // Writes back the entries (stopping at the first error) and releases
  // every one of them. Encoding is spread over cores where it costs.
  Status WriteBackEntries(std::vector<ChunkCache::Entry*> dirty) REQUIRES(rw_);
  // Writes back this dataset's dirty chunks while the cache is over budget.
  Status ShedDirty() REQUIRES(rw_);
  // Before a write or erase changes anything: sheds what earlier ones left
  // over budget, so a shed that fails refuses the change with every element
  // as it was (never a failed write whose bytes were taken).
  Status MakeRoom() REQUIRES(rw_) { return ShedDirty(); }
  // After a write or erase took its bytes: sheds, and a failure is logged
  // and left to the next change's MakeRoom or to the commit, not returned
  // by the change that succeeded.
  void ShedAfterChange() REQUIRES(rw_);
  // Write-behind (chunk_cache.h): stores and drops the dataset's chunks
  // streamed in full once they fill the window. A failed store is logged
  // and left to the commit.
  void WriteBehind() REQUIRES(rw_);
  // Whether encoding or decoding a chunk costs enough to be worth a core of
  // its own: it compresses (deflate) or is a sparse set. Checksum and
  // shuffle alone run at several GB/s, faster than a hop to the thread
  // pool and back for chunks of up to megabytes.
  bool CodecIsCostly() const REQUIRES_SHARED(rw_);
  // WriteBytes within the current size, under rw_ held exclusively.
  Status WriteBytesInsideLocked(uint64_t offset, size_t length, const char* in) REQUIRES(rw_);
  // A chunk goes to the file in three steps, so that a failed write (a full
  // disk) leaves the index naming the chunk's old, untouched extent:
  // ReserveChunk says where `bytes` go (the current extent if allocated
  // since the last commit and of that size, else a new one); once written,
  // SettleChunk links it into the index (recording the size and filter mask
  // where sizes vary) and frees the old extent; if the write failed,
  // AbandonChunk gives a new extent back. StoreChunkImage does all three.
  uint64_t ReserveChunk(ChunkCoord coords, const ChunkRecord& rec, uint64_t bytes) REQUIRES(rw_);
  Status SettleChunk(ChunkCoord coords, const ChunkRecord& rec, uint64_t dest, uint64_t bytes, uint32_t filter_mask)
      REQUIRES(rw_);
  void AbandonChunk(const ChunkRecord& rec, uint64_t dest, uint64_t bytes) REQUIRES(rw_);
  Status StoreChunkImage(ChunkCoord coords, const ChunkRecord& rec, const FileImage& img) REQUIRES(rw_);
  Status CheckExtent(uint64_t addr, uint64_t bytes, uint64_t linear) const REQUIRES_SHARED(rw_);
  // Relayout's steps (engine/relayout.cc), under rw_ held exclusively: the
  // byte image copied into `to` (a private state), then every field that
  // describes the contents swapped with it.
  Status CopyImageLocked(DatasetState& to) REQUIRES(rw_, to.rw_);
  void ExchangeContentsLocked(DatasetState& other) REQUIRES(rw_, other.rw_);
  // Bytes of the chunk as stored: trimmed to the maximum shape.
  uint64_t BytesOfChunk(ChunkCoord coords) const REQUIRES_SHARED(rw_);
  // Bytes a stored chunk takes in the file: its record's size where chunk
  // sizes vary, else BytesOfChunk.
  uint64_t FileBytesOf(ChunkCoord coords, const ChunkRecord& rec) const REQUIRES_SHARED(rw_);
  Status CheckWritable() const;
  // NotFound once MarkGone was called; checked under commit_mu_.
  Status CheckPresent() const;
  // "dataset 12 chunk [3,4]", for messages.
  std::string ChunkWhat(ChunkCoord c) const;
  // Logs a Corruption status (a damaged chunk is always worth a line), and
  // returns it.
  Status Corrupt(Status s) const;

  // Where the lock order is checked: aborts unless this thread holds the
  // container's commit_mu_ exclusively (the commit and refresh support
  // above; clang cannot follow c_ to the container's mutex).
  void AssertCommitExclusive() const;

  // Only so that ContainerImpl's mutexes can name rw_ in ACQUIRED_BEFORE.
  friend class ContainerImpl;

  ContainerImpl* const c_;
  const ObjectId id_;
  mutable SharedMutex rw_ ACQUIRED_BEFORE(ChunkCache::Entry::merge_mu){LockRank::kDataset};
  // The key of this state's chunks in the cache (CacheKey::dataset): unique
  // per state, and it moves with the contents in ExchangeContentsLocked.
  uint64_t cache_id_ GUARDED_BY(rw_);
  DatasetRecord meta_ GUARDED_BY(rw_);
  // The pointers are guarded; the index and the format are safe for
  // concurrent readers that hold rw_ shared (chunk_index.h, chunk_format.h).
  std::unique_ptr<ChunkIndex> index_ GUARDED_BY(rw_);
  // Copies for readers without the lock (item_size(), size_bytes(), ...),
  // written under rw_ held exclusively.
  std::atomic<size_t> item_size_;
  std::atomic<uint64_t> num_elements_{0};
  std::atomic<uint64_t> size_bytes_{0};
  Dims grid_ GUARDED_BY(rw_);  // chunks per dimension at the current shape
  std::unique_ptr<ChunkFormat> format_ GUARDED_BY(rw_);
  std::atomic<uint64_t> allocated_chunks_{0};
  std::atomic<uint64_t> stored_bytes_{0};
  std::array<std::atomic<uint64_t>, 1024> advised_{};  // chunk + 1, see AdviseChunk
  bool header_dirty_ GUARDED_BY(rw_) = false;          // counters changed since the last commit
  Status lost_writes_ GUARDED_BY(rw_);                 // the first lost write not yet taken
  uint64_t defined_ GUARDED_BY(rw_) = 0;               // sparse: defined elements, as written back
  // Set under ns_mu_ (Remove, or Rename over it); read by Relayout.
  std::atomic<bool> detached_{false};
  // Set under commit_mu_ held exclusively; read under commit_mu_ shared.
  std::atomic<bool> gone_{false};
  mutable Mutex path_mu_{LockRank::kDatasetPath};
  std::string path_ GUARDED_BY(path_mu_);
};

class ContainerImpl {
 public:
  static Result<std::unique_ptr<ContainerImpl>> Open(std::unique_ptr<File> file, const OpenOptions& options);
  // Writes the initial state of a new container into an empty file (the
  // caller syncs it).
  static Status Format(File* file);
  ~ContainerImpl();

  Status Close();
  void Discard();
  Status Commit();
  // Moves a read-only container to the newest commit (engine/load.cc).
  Result<RefreshInfo> Refresh();
  bool dirty() const;
  bool read_only() const { return read_only_; }
  const std::string& path() const { return file_->name(); }

  Result<ObjectId> Resolve(std::string_view path);
  Result<ObjectId> Lookup(ObjectId parent, std::string_view name);
  Result<ObjectInfo> Stat(ObjectId id);
  Result<std::vector<Entry>> List(ObjectId group);
  Result<std::string> PathOf(ObjectId id);
  Result<ObjectId> CreateGroup(ObjectId parent, std::string_view name);
  Result<ObjectId> MakeGroups(std::string_view path, bool parents);
  Result<std::shared_ptr<DatasetState>> CreateDataset(ObjectId parent, std::string_view name, const DatasetOptions& o);
  Result<std::shared_ptr<DatasetState>> OpenDataset(ObjectId id);
  // A dataset state for object `id` with the layout of `rec` (checked by
  // MakeDatasetRecord) and no chunks, linked nowhere: CreateDataset links it
  // into the tree, Relayout swaps its contents into a live state.
  Result<std::shared_ptr<DatasetState>> NewDatasetState(ObjectId id, DatasetRecord rec);
  Status Remove(ObjectId parent, std::string_view name);
  Status Rename(ObjectId from_parent, std::string_view from_name, ObjectId to_parent, std::string_view to_name,
                bool no_replace);
  Result<std::vector<std::string>> ListAttributes(ObjectId id);
  Result<Attribute> GetAttribute(ObjectId id, std::string_view name);
  Status SetAttribute(ObjectId id, std::string_view name, const Attribute& value);
  Status DeleteAttribute(ObjectId id, std::string_view name);
  CacheStats cache_stats() const { return cache_.stats(); }
  SpaceInfo space();

  // For DatasetState.
  File* file() const { return file_.get(); }
  Allocator& allocator() { return alloc_; }
  ChunkCache& cache() { return cache_; }
  BlockStore& store() { return store_; }
  SharedMutex& commit_mu() RETURN_CAPABILITY(commit_mu_) { return commit_mu_; }
  // Dataset `id` has changes the next commit must write back: the commit
  // visits only the datasets noted since the last one, so that its cost
  // grows with what changed, not with the number of datasets. Every change
  // to a dataset's chunks, index or header notes it (builds with
  // the expensive checks on check that no other dataset had any).
  void NoteDirty(ObjectId id) {
    data_dirty_.store(true, std::memory_order_relaxed);
    MutexLock lock(dirty_ds_mu_);
    dirty_ds_.insert(id);
  }
  // NoSpace if `more` bytes of changes besides those the cache holds could
  // not be stored (engine/space/dirty_room.h).
  Status CheckRoomForChanges(uint64_t more) {
    const uint64_t dirty = cache_.dirty_bytes();
    const uint64_t after = more > UINT64_MAX - dirty ? UINT64_MAX : dirty + more;
    // Most writes: no lock, no syscall (the allocator's figures need its lock).
    if (room_.Roomy(after)) return Status::OK();
    const uint64_t free = alloc_.free_bytes();
    return room_.Check(after, free - std::min(free, alloc_.held_bytes()));
  }

 private:
  struct Node {
    ObjectId id = 0;
    ObjectKind kind = ObjectKind::kGroup;
    Node* parent = nullptr;
    std::string name;
    NameMap<Node*> children;             // in name order, found by hash
    std::vector<AttributeRecord> attrs;  // sorted by name
    // The bytes of attrs' names and values (AttributeBytes), kept so that
    // setting one attribute does not sum all of them again.
    size_t attr_bytes = 0;
    BlockRef block;  // as of the last commit (or empty: new)
    bool dirty = false;
    std::shared_ptr<DatasetState> ds;
    // Groups: the bytes of the children's entries (ChildEntryBytes), the
    // pages they are written in when there are many (engine/txn/group_pages.h),
    // and the children that became dirty since the last commit (ids, as the
    // nodes may go; a commit visits only these, not every child).
    size_t child_bytes = 0;
    GroupPages pages;
    std::vector<ObjectId> dirty_children;
  };

  ContainerImpl(std::unique_ptr<File> file, const OpenOptions& o);

  // Loading a committed state (engine/load.cc).
  // A tree being loaded: its nodes, and for a refresh the tree it replaces,
  // whose unchanged parts are copied instead of read, and what differs.
  using NodeMap = std::unordered_map<ObjectId, std::unique_ptr<Node>>;
  // The bytes of the names and values of `attrs` (the per-object limit
  // counts them).
  static size_t AttributeBytes(const std::vector<AttributeRecord>& attrs) {
    size_t n = 0;
    for (const AttributeRecord& a : attrs) n += a.name.size() + a.value.data.size();
    return n;
  }
  struct LoadTarget {
    Superblock sb;  // the state being loaded
    NodeMap nodes;
    Node* root = nullptr;
    const std::unordered_map<ObjectId, std::unique_ptr<Node>>* old = nullptr;
    RefreshInfo* info = nullptr;
    // Datasets whose record changed: the live state and the one loaded.
    std::vector<std::pair<std::shared_ptr<DatasetState>, std::shared_ptr<DatasetState>>> replaced;
  };
  // Reads the open's first state (read-only: registered as a reader's).
  Status Load();
  // The newest valid superblock.
  Result<Superblock> ReadNewestSuperblock() REQUIRES(commit_mu_);
  // Corruption when the file is shorter than the file end `sb` records.
  Status CheckLongEnough(const Superblock& sb);
  // Read-only: registers the newest state whose file is long enough (a
  // reader checks the length only once its generation is registered, and
  // looks again when a commit cut the file meanwhile); the caller Keep()s it.
  Result<Superblock> HoldNewestState() REQUIRES(commit_mu_);
  // The free list of the state of `sb` (and the blocks it is made of).
  Result<std::vector<FreedExtent>> ReadFreeList(const Superblock& sb, FreeListChain* chain);
  // The free list of `sb` derived from what its tree `nodes` references
  // (engine/rebuild_free_list.cc).
  Result<std::vector<FreedExtent>> RebuildFreeList(const Superblock& sb, const NodeMap& nodes,
                                                   const std::vector<BlockRef>& list_blocks);
  // ReadFreeList, except that a damaged free list (Corruption) does not
  // refuse the state: a reader, which allocates nothing, goes without one;
  // a writer rebuilds it and sets *rebuilt, so that the next commit writes
  // it. Both log a warning.
  // `chain` gets the blocks of the list read, or, when it was rebuilt, the
  // blocks of the damaged chain that could be read (the rebuild counts them
  // as in use; the next commit frees them).
  Result<std::vector<FreedExtent>> ReadOrRebuildFreeList(const Superblock& sb, const NodeMap& nodes, bool* rebuilt,
                                                         FreeListChain* chain);
  // Loads the tree of `sb` into `t` (the caller adopts it on success).
  Status LoadTree(const Superblock& sb, LoadTarget* t) REQUIRES(ns_mu_);
  Status LoadNode(const BlockRef& ref, ObjectKind kind, ObjectId expect_id, Node* parent, std::string name, int depth,
                  LoadTarget* t) REQUIRES(ns_mu_);
  // Copies the unchanged subtree of `from` (a node of t->old) into t.
  Status CopySubtree(const Node& from, Node* parent, std::string name, LoadTarget* t) REQUIRES(ns_mu_);
  // Writable: frees the held extents that no reader can reach any more.
  void ReleaseHeld() REQUIRES(commit_mu_);
  Status WriteLockRecord();
  Result<Node*> GetNode(ObjectId id) REQUIRES_SHARED(ns_mu_);
  Result<Node*> GetGroup(ObjectId id) REQUIRES_SHARED(ns_mu_);
  void MarkDirtyLocked(Node* n) REQUIRES(ns_mu_);
  // Links n into parent's children (n->name) / unlinks the child `name`,
  // keeping child_bytes, pages and dirty_children up to date.
  static void AddChildLocked(Node* parent, Node* n);
  static void RemoveChildLocked(Node* parent, const std::string& name);
  Status WriteNodesLocked(Node* n) REQUIRES(commit_mu_, ns_mu_);
  // The commit record of a commit made with one fdatasync: every fresh
  // extent with its checksum, read back from the file; empty when there are
  // too many (the commit makes both fdatasyncs).
  Result<std::vector<WrittenExtent>> WrittenForRecord() REQUIRES(commit_mu_, ns_mu_);
  // CommitLocked(last) with nothing to commit.
  Status SealLocked() REQUIRES(commit_mu_, ns_mu_);
  Status CheckWritable() const;
  Status Refuse(Status s, std::string_view op) const;  // logs a refused operation
  Node* NewNodeLocked(ObjectKind kind, Node* parent, std::string name) REQUIRES(ns_mu_);
  void DetachLocked(Node* n) REQUIRES(ns_mu_);
  std::string PathOfLocked(const Node* n) const REQUIRES_SHARED(ns_mu_);
  // "/a/b" + "c" -> "/a/b/c" (and "/" + "c" -> "/c"), for messages.
  std::string ChildPathLocked(const Node* parent, std::string_view name) const REQUIRES_SHARED(ns_mu_);
  // AlreadyExists if the name is taken, NoSpace if the group is full.
  // AlreadyExists, NoSpace (a full group) or InvalidArgument (too deep: see
  // engine/format/limits.h) for a new child of parent.
  Status CheckNewChildLocked(const Node* parent, std::string_view name) const REQUIRES_SHARED(ns_mu_);
  // Levels from the root to n, and from n to its deepest descendant.
  static int DepthOfLocked(const Node* n);
  static int HeightOfLocked(const Node* n);
  // InvalidArgument if a subtree `height` levels tall, put under parent,
  // would reach deeper than kMaxDepth; `what` names it.
  Status CheckDepthLocked(const Node* parent, int height, const std::string& what) const REQUIRES_SHARED(ns_mu_);
  // `last`: the container is closing. Its commit makes both fdatasyncs,
  // and where the last commit was made with one, a superblock without a
  // record (the same state, the next generation) says that it is complete,
  // so that a later open reads nothing back and a damaged extent of it is
  // Corruption, never taken for a commit a power failure cut short.
  Status CommitLocked(bool last = false) REQUIRES(commit_mu_) EXCLUDES(ns_mu_);

  std::unique_ptr<File> file_;
  const bool read_only_;
  // Read-only: the generation read, registered (engine/txn/reader_table.h).
  ReaderSlot reader_ GUARDED_BY(commit_mu_);
  // Writable: seconds after a commit before the space it freed is reused
  // (OpenOptions::reuse_delay_seconds, resolved).
  int64_t reuse_delay_s_ = 0;
  std::string holder_;
  std::string holder_mount_;
  const bool rebuild_free_list_;  // OpenOptions::rebuild_free_list
  Allocator alloc_;
  BlockStore store_;
  ChunkCache cache_;
  DirtyRoom room_;  // refuses changes the disk could not take (dirty_room.h)

  // The order: engine/util/lock_order.h. Changing the tree or sb_ takes
  // both (commit_mu_ shared or exclusive, then ns_mu_ exclusively).
  mutable SharedMutex commit_mu_ ACQUIRED_BEFORE(DatasetState::rw_){LockRank::kContainerCommit};
  mutable SharedMutex ns_mu_ ACQUIRED_AFTER(commit_mu_)
      ACQUIRED_BEFORE(DatasetState::rw_){LockRank::kContainerNamespace};
  // The free lists commits write.
  FreeListLog free_log_ GUARDED_BY(commit_mu_);
  // FreeListLog::bytes() is an atomic, for any thread.
  uint64_t free_list_bytes() const NO_THREAD_SAFETY_ANALYSIS { return free_log_.bytes(); }
  bool closed_ GUARDED_BY(commit_mu_) = false;
  Superblock sb_ GUARDED_BY(ns_mu_);  // the last committed state
  // The last commit record this open read back whole (engine/txn/newest_state.h),
  // and the last incomplete commit it logged.
  CheckedCommit checked_commit_ GUARDED_BY(commit_mu_);
  uint64_t incomplete_logged_ GUARDED_BY(commit_mu_) = 0;
  // The tree. The fields of its nodes are guarded by ns_mu_ too, though
  // clang cannot follow the pointers to say so.
  std::unordered_map<ObjectId, std::unique_ptr<Node>> nodes_ GUARDED_BY(ns_mu_);
  Node* root_ GUARDED_BY(ns_mu_) = nullptr;
  std::vector<std::shared_ptr<DatasetState>> detached_ GUARDED_BY(ns_mu_);  // removed, awaiting reclaim
  uint64_t sb_next_id_ GUARDED_BY(ns_mu_) = 0;                              // next object id
  std::atomic<bool> ns_dirty_{false};                                       // set under ns_mu_
  std::atomic<bool> data_dirty_{false};
  Mutex dirty_ds_mu_ ACQUIRED_AFTER(ns_mu_, DatasetState::rw_){LockRank::kDirtyDatasets};
  std::unordered_set<ObjectId> dirty_ds_ GUARDED_BY(dirty_ds_mu_);  // see NoteDirty
};

// The on-disk description of a new dataset from creation options: checks
// rank, shapes, chunks, fill and filters (InvalidArgument naming the
// problem) and picks the chunks and index kind left to the engine.
Result<DatasetRecord> MakeDatasetRecord(const DatasetOptions& o);

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_CONTAINER_IMPL_H_
