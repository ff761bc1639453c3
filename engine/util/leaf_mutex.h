// The lock order's leaf locks (engine/container_impl.h) as a type. A leaf
// lock guards a few fields for a few instructions: its holder takes no
// other lock and does no file I/O. LeafMutex<M> is M (std::mutex,
// AdaptiveMutex) that also counts the leaf locks the calling thread holds,
// so that the places that touch the file can check the rule: BlockStore
// does before every block it reads or writes (engine/txn/block_store.cc),
// and the test fakes count I/O made under a leaf lock
// (tests/testutil/fault_file.h). The count is one thread-local add and
// subtract per lock, nothing beside a mutex.
//
// Meets Lockable, for std::lock_guard and std::unique_lock.
#ifndef SLABFS_ENGINE_UTIL_LEAF_MUTEX_H_
#define SLABFS_ENGINE_UTIL_LEAF_MUTEX_H_

namespace slabfs::engine {

namespace internal {
inline thread_local int leaf_locks_held = 0;
}  // namespace internal

// How many leaf locks the calling thread holds.
inline int LeafLocksHeld() { return internal::leaf_locks_held; }

template <typename M>
class LeafMutex {
 public:
  LeafMutex() = default;
  LeafMutex(const LeafMutex&) = delete;
  LeafMutex& operator=(const LeafMutex&) = delete;

  void lock() {
    mu_.lock();
    ++internal::leaf_locks_held;
  }
  bool try_lock() {
    if (!mu_.try_lock()) return false;
    ++internal::leaf_locks_held;
    return true;
  }
  void unlock() {
    --internal::leaf_locks_held;
    mu_.unlock();
  }

 private:
  M mu_;
};

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_UTIL_LEAF_MUTEX_H_
