// A mutex for critical sections of a few dozen instructions taken by every
// read (the chunk cache's map and lists): a thread that finds it held spins
// for a while before it sleeps. std::mutex sleeps in the kernel at once, and
// two threads reading cached chunks then spend more time in futex calls and
// context switches than in the section itself (20000 cached 64 x 64
// windows on 2 threads: bench_vs_hdf5, docs/architecture.md).
//
// glibc's adaptive mutex (PTHREAD_MUTEX_ADAPTIVE_NP) spins a bounded number
// of times, then waits on a futex like any mutex, so a holder that was
// preempted costs a sleeping waiter nothing. ThreadSanitizer sees it as a
// pthread mutex. Meets Lockable, for std::lock_guard and std::unique_lock.
#ifndef SLABFS_ENGINE_UTIL_ADAPTIVE_MUTEX_H_
#define SLABFS_ENGINE_UTIL_ADAPTIVE_MUTEX_H_

#include <pthread.h>

namespace slabfs::engine {

class AdaptiveMutex {
 public:
  AdaptiveMutex() {
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&mu_, &attr);
    pthread_mutexattr_destroy(&attr);
  }
  ~AdaptiveMutex() { pthread_mutex_destroy(&mu_); }
  AdaptiveMutex(const AdaptiveMutex&) = delete;
  AdaptiveMutex& operator=(const AdaptiveMutex&) = delete;

  void lock() { pthread_mutex_lock(&mu_); }
  bool try_lock() { return pthread_mutex_trylock(&mu_) == 0; }
  void unlock() { pthread_mutex_unlock(&mu_); }

 private:
  pthread_mutex_t mu_;
};

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_UTIL_ADAPTIVE_MUTEX_H_
