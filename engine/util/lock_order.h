// The engine's lock order: every mutex of the engine, in the one order in
// which a thread may take them, and a check of that order at run time.
//
// A thread that holds a lock takes only locks of a higher rank; two locks of
// one rank are never held together (except a private object's, below). A
// lock marked "I/O" may be held across file system calls, so whatever waits
// for it may wait for a disk; every other lock guards a few instructions of
// memory work only.
//
//   rank                  mutex                               I/O under it
//   kContainerCommit      ContainerImpl::commit_mu_           yes: commit (writes, fsync),
//                         shared by every operation that        refresh (reads), and every
//                         changes or reads contents,            operation's own I/O
//                         exclusive in Commit, Close, Refresh
//   kContainerNamespace   ContainerImpl::ns_mu_               yes: the commit writes object
//                         the object tree: shared to read,      blocks and flushes datasets
//                         exclusive to change                   under it exclusively
//   kDataset              DatasetState::rw_                   yes: chunk reads and writes,
//                         shared by readers, exclusive by       write-back, index flushes
//                         writers and write-back
//   kChunkMerge           ChunkCache::Entry::merge_mu         yes: reads the stored chunk to
//                         merges a partly written chunk         merge it in (CompleteEntry)
//                         (write without read)
//   kIndexLoad            BTreeIndex::load_mu_                yes: reads index blocks
//                         lazy loading of B-tree pages (the
//                         paged array takes no lock: it
//                         publishes pages by compare-and-swap)
//   kDirtyDatasets        ContainerImpl::dirty_ds_mu_          no
//                         the datasets the next commit visits
//   kDiskRoom             DirtyRoom::mu_                       yes: statvfs of the container's
//                         the disk's free space                  file system (at most every
//                                                                100 ms, and near the edge)
//   kAllocator            Allocator::mu_                       yes: Release asks the kernel
//                         free space in the container            for reader locks
//                                                                (F_OFD_GETLK), once per
//                                                                commit, under commit_mu_
//   kDatasetPath          DatasetState::path_mu_               no
//                         a dataset's path, for messages
//   kChunkCache           ChunkCache::mu_ (spins, then sleeps) no
//                         the cache's map and lists
//   kBufferPool           BufferPool::mu_                      no
//                         recycled chunk buffers, process-wide
//   kChunkLoad            ChunkCache::Load::mu                 no
//                         a chunk load's end, which readers
//                         of the same chunk wait for (taken
//                         with no cache lock held; the wait
//                         itself lasts a load, so it is made
//                         holding no lock that forbids I/O)
//   kThreadPool           the thread pool's queue and each     no
//                         job's completion (thread_pool.cc)
//
// Who takes what under what (each pair goes up the table): a dataset
// operation takes commit_mu_ shared, then its rw_; the commit takes
// commit_mu_, then ns_mu_, then each changed dataset's rw_; a read of a
// partly written cached chunk takes merge_mu under rw_, and the index under
// it; index loads ask the allocator for the file's end; the cache recycles
// buffers into the pool under its own lock; paths are read for messages
// under any of the locks above them.
//
// A private object: a DatasetState built for one call and reachable from
// that thread only (Relayout's new layout, Refresh's loaded state) is
// locked while the live state's rw_ is held, with the same rank. No other
// thread can wait for it, so it takes no part in the order: it is locked
// with kPrivateObject (engine/util/mutex.h), which skips the check.
//
// Outside the engine: the front ends' own locks (fusefs: Filesystem's
// commit_mu and notes_mu, DirHandle::mu, ...; the Python binding's handle
// lock) are taken before calling the engine, never inside it. The engine
// calls back into a front end under rw_ (Dataset::WithFileExtents' user,
// ForEachDefinedRun's visitor and check): such a callback may take no
// engine lock, and no front-end lock that is held around engine calls.
//
// Checked twice: clang's -Wthread-safety-beta checks the ACQUIRED_AFTER
// annotations of the mutexes it can name (the `tsa` stage of
// tests/run.sh), and where the order is checked at run time (builds
// without NDEBUG, SLABFS_LOCK_ORDER_CHECKS, and any program with the
// expensive checks on: sanitizer builds, or SLABFS_EXPENSIVE_CHECKS=1 in
// the environment as ctest runs, engine/util/expensive_checks.h)
// the mutexes keep a per-thread stack of the ranked locks held and abort, naming both
// locks, when a thread takes one out of order
// (tests/engine/util/lock_order_test.cc).
#ifndef SLABFS_ENGINE_UTIL_LOCK_ORDER_H_
#define SLABFS_ENGINE_UTIL_LOCK_ORDER_H_

#include <cstdint>

#if defined(SLABFS_EXPENSIVE_CHECKS) || !defined(NDEBUG)
#define SLABFS_LOCK_ORDER_CHECKS 1
#else
#define SLABFS_LOCK_ORDER_CHECKS 0
#endif

namespace slabfs::engine {

// The ranks of the table above, outermost first.
enum class LockRank : uint8_t {
  kUnranked = 0,  // outside the order: never checked (tests, private objects)
  kContainerCommit = 10,
  kContainerNamespace = 20,
  kDataset = 30,
  kChunkMerge = 40,
  kIndexLoad = 50,
  kDirtyDatasets = 60,
  kDiskRoom = 61,
  kAllocator = 62,
  kDatasetPath = 63,
  kChunkCache = 70,
  kBufferPool = 71,
  kChunkLoad = 72,
  kThreadPool = 80,
};

// Whether a lock of `rank` may be held while the container's blocks are read
// or written: the ranks marked "I/O" above down to the index's page loads.
// The ranks after them guard a few fields for a few instructions (the disk
// room and the allocator make one system call each, never a block's I/O).
constexpr bool RankAllowsBlockIo(LockRank rank) { return rank == LockRank::kUnranked || rank <= LockRank::kIndexLoad; }

namespace lock_order {
inline thread_local int no_block_io_locks = 0;
}  // namespace lock_order

// How many locks the calling thread holds under which no block may be read
// or written (RankAllowsBlockIo false). Every build counts them, one
// thread-local add per such lock (engine/util/mutex.h): BlockStore checks
// before every block it reads or writes, and the tests' fake file counts
// I/O made under one (tests/testutil/fault_file.h).
inline int NoBlockIoLocksHeld() { return lock_order::no_block_io_locks; }

// Whether the mutexes of engine/util/mutex.h check the order in every
// program of this build (others check it when ExpensiveChecks()).
inline constexpr bool kLockOrderChecks = SLABFS_LOCK_ORDER_CHECKS != 0;

// The mutexes a rank names, for messages ("ContainerImpl::commit_mu_").
const char* LockRankName(LockRank rank);

// The per-thread record of the ranked locks held, used by the mutex
// wrappers when they check (engine/util/mutex.h); not for other callers.
namespace lock_order {
// Before blocking on `mu`: aborts with a message naming both locks if this
// thread holds a lock of `rank` or higher (or more locks than it records).
void CheckAcquire(const void* mu, LockRank rank);
// `mu` is now held, exclusively or shared (pushed), or no longer held
// (removed wherever it is: locks need not be released last in, first out).
void Acquired(const void* mu, LockRank rank, bool exclusive);
void Released(const void* mu);
// Whether this thread holds `mu` (exclusively, if asked).
bool Held(const void* mu, bool exclusive);
// Aborts with a message: `mu` (of `rank`) should be held and is not.
[[noreturn]] void FailNotHeld(const void* mu, LockRank rank);
}  // namespace lock_order

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_UTIL_LOCK_ORDER_H_
