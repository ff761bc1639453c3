// The engine's mutexes: std::mutex, std::shared_mutex and AdaptiveMutex
// wrapped so that clang's thread safety analysis sees them
// (engine/util/thread_annotations.h), each with its rank in the lock order
// (engine/util/lock_order.h), and the scoped holders that take them.
//
//   Mutex mu_{LockRank::kAllocator};
//   uint64_t free_bytes_ GUARDED_BY(mu_) = 0;
//   ...
//   MutexLock lock(mu_);            // exclusive, released at scope end
//   ReaderLock lock(rw_);           // a SharedMutex, shared
//   WriterLock lock(rw_);           // a SharedMutex, exclusive
//   WriterLock lock(other.rw_, kPrivateObject);  // outside the order
//
// Where the order is checked (builds without NDEBUG, kLockOrderChecks, and
// wherever the expensive checks are on: SLABFS_EXPENSIVE_CHECKS builds, or
// SLABFS_EXPENSIVE_CHECKS=1 in the environment, as ctest runs; see
// engine/util/expensive_checks.h), every lock is checked against the locks
// the thread already holds, and AssertHeld() checks that this thread holds
// the mutex; elsewhere they cost the mutex and one flag's test. Tests check
// the order in any build with BasicMutex<Raw, true>.
#ifndef SLABFS_ENGINE_UTIL_MUTEX_H_
#define SLABFS_ENGINE_UTIL_MUTEX_H_

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>

#include "engine/util/adaptive_mutex.h"
#include "engine/util/expensive_checks.h"
#include "engine/util/lock_order.h"
#include "engine/util/thread_annotations.h"

namespace slabfs::engine {

// Locks a mutex of an object that no other thread can reach (one being
// built, or torn down, by this thread): it cannot take part in a deadlock,
// so it is taken outside the order (see engine/util/lock_order.h).
struct PrivateObject {
  explicit PrivateObject() = default;
};
inline constexpr PrivateObject kPrivateObject{};

class CondVar;

// An exclusive mutex over Raw (std::mutex, or AdaptiveMutex where a lock is
// taken for a few dozen instructions by every read).
template <typename Raw, bool kCheckOrder = kLockOrderChecks>
class CAPABILITY("mutex") BasicMutex {
 public:
  explicit BasicMutex(LockRank rank) : rank_(rank) {}
  BasicMutex(const BasicMutex&) = delete;
  BasicMutex& operator=(const BasicMutex&) = delete;

  void Lock() ACQUIRE() {
    if (CheckingOrder()) lock_order::CheckAcquire(this, rank_);
    mu_.lock();
    if (CheckingOrder()) lock_order::Acquired(this, rank_, true);
    counted_ = !RankAllowsBlockIo(rank_);
    lock_order::no_block_io_locks += counted_;
  }
  void LockPrivate() ACQUIRE() {
    mu_.lock();
    if (CheckingOrder()) lock_order::Acquired(this, LockRank::kUnranked, true);
    counted_ = false;
  }
  void Unlock() RELEASE() {
    if (CheckingOrder()) lock_order::Released(this);
    lock_order::no_block_io_locks -= counted_;
    mu_.unlock();
  }
  // Aborts, where the order is checked, unless this thread holds the mutex.
  void AssertHeld() const ASSERT_CAPABILITY(this) {
    if (CheckingOrder()) {
      if (!lock_order::Held(this, true)) lock_order::FailNotHeld(this, rank_);
    }
  }
  LockRank rank() const { return rank_; }

 private:
  // Whether this mutex checks the order: always where kCheckOrder (debug
  // builds, the tests' checked mutexes), else where the expensive checks
  // are on (engine/util/expensive_checks.h), the same for the program's life.
  static bool CheckingOrder() {
    if constexpr (kCheckOrder) return true;
    return ExpensiveChecks();
  }
  friend class CondVar;
  Raw mu_;
  const LockRank rank_;
  bool counted_ = false;  // in NoBlockIoLocksHeld; written by the holder only
};

using Mutex = BasicMutex<std::mutex>;

// A readers-writer mutex: shared by readers, exclusive for a writer.
template <bool kCheckOrder = kLockOrderChecks>
class CAPABILITY("mutex") BasicSharedMutex {
 public:
  // Shared mutexes are the outer, I/O-allowed locks: they are not counted in
  // NoBlockIoLocksHeld, so a rank that forbids block I/O is refused.
  explicit BasicSharedMutex(LockRank rank) : rank_(rank) {
    if (!RankAllowsBlockIo(rank)) std::abort();
  }
  BasicSharedMutex(const BasicSharedMutex&) = delete;
  BasicSharedMutex& operator=(const BasicSharedMutex&) = delete;

  void Lock() ACQUIRE() {
    if (CheckingOrder()) lock_order::CheckAcquire(this, rank_);
    mu_.lock();
    if (CheckingOrder()) lock_order::Acquired(this, rank_, true);
  }
  void LockPrivate() ACQUIRE() {
    mu_.lock();
    if (CheckingOrder()) lock_order::Acquired(this, LockRank::kUnranked, true);
  }
  void Unlock() RELEASE() {
    if (CheckingOrder()) lock_order::Released(this);
    mu_.unlock();
  }
  // A shared lock waits for a writer like an exclusive one (and a waiting
  // writer holds back new readers), so it keeps the same order.
  void LockShared() ACQUIRE_SHARED() {
    if (CheckingOrder()) lock_order::CheckAcquire(this, rank_);
    mu_.lock_shared();
    if (CheckingOrder()) lock_order::Acquired(this, rank_, false);
  }
  void UnlockShared() RELEASE_SHARED() {
    if (CheckingOrder()) lock_order::Released(this);
    mu_.unlock_shared();
  }
  // Abort, where the order is checked, unless this thread holds the mutex
  // exclusively / in either mode.
  void AssertHeld() const ASSERT_CAPABILITY(this) {
    if (CheckingOrder()) {
      if (!lock_order::Held(this, true)) lock_order::FailNotHeld(this, rank_);
    }
  }
  void AssertReaderHeld() const ASSERT_SHARED_CAPABILITY(this) {
    if (CheckingOrder()) {
      if (!lock_order::Held(this, false)) lock_order::FailNotHeld(this, rank_);
    }
  }
  LockRank rank() const { return rank_; }

 private:
  // Whether this mutex checks the order: always where kCheckOrder (debug
  // builds, the tests' checked mutexes), else where the expensive checks
  // are on (engine/util/expensive_checks.h), the same for the program's life.
  static bool CheckingOrder() {
    if constexpr (kCheckOrder) return true;
    return ExpensiveChecks();
  }
  std::shared_mutex mu_;
  const LockRank rank_;
};

using SharedMutex = BasicSharedMutex<>;

// Holds a mutex exclusively for its scope (a Mutex, or a SharedMutex as a
// writer: WriterLock says so where it helps the reader).
template <typename M>
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(M& mu) ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  MutexLock(M& mu, PrivateObject) ACQUIRE(mu) : mu_(mu) { mu_.LockPrivate(); }
  ~MutexLock() RELEASE() { mu_.Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  M& mu_;
};

template <typename M>
class SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(M& mu) ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  WriterLock(M& mu, PrivateObject) ACQUIRE(mu) : mu_(mu) { mu_.LockPrivate(); }
  ~WriterLock() RELEASE() { mu_.Unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  M& mu_;
};

// Holds a SharedMutex shared for its scope.
template <typename M>
class SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(M& mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_.LockShared(); }
  ~ReaderLock() RELEASE() { mu_.UnlockShared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  M& mu_;
};

// A condition variable waited on with a Mutex held (std::mutex underneath,
// so as cheap as std::condition_variable).
class CondVar {
 public:
  // Releases mu while waiting and holds it again on return (spurious
  // wake-ups included: wait in a loop).
  template <bool kCheck>
  void Wait(BasicMutex<std::mutex, kCheck>& mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_UTIL_MUTEX_H_
