// Drops byte ranges of the kernel's page cache from a thread of its own.
//
// After fallocate changes bytes the kernel has cached (a punched hole or a
// zeroed range reads as the fill value, which need not be zero), the daemon
// tells the kernel to forget those pages (fuse_lowlevel_notify_inval_inode)
// before it answers, so that the caller's next read fetches them. The kernel
// forgets a page only once it can lock it, and a page that a read is filling
// stays locked until the daemon answers that read: a handler that notified
// by itself could wait for a read queued behind it, forever on a
// single-threaded session. So the handler hands the notice to this thread
// and waits a bounded time; if the notice is stuck behind such a read, the
// handler answers anyway and the notice completes once the read is served.
//
// The notify function is given rather than a session so that the thread's
// rules can be tested on their own. Start launches the thread, Stop drops
// queued notices and joins (both idempotent; the destructor stops; they must
// not race each other: the daemon calls them from init and destroy).
// Invalidate may be called from any thread.
#ifndef SLABFS_FUSEFS_INVALIDATOR_H_
#define SLABFS_FUSEFS_INVALIDATOR_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace slabfs::fusefs {

// How long a handler waits for a drop before it answers anyway, and how
// long after its answer it drops the pages at the ends once more (a read
// may bring them back meanwhile): fallocate's punches and zeroed ranges
// (sparse_ops.cc), a file that grew (stale_end_page.h).
inline constexpr std::chrono::milliseconds kInvalidateWait{1000};
inline constexpr std::chrono::milliseconds kRedropDelay{20};

class Invalidator {
 public:
  // Called on the thread: (inode, offset, length) as for
  // fuse_lowlevel_notify_inval_inode; returns 0 or -errno.
  using NotifyFn = std::function<int(uint64_t ino, int64_t offset, int64_t length)>;

  explicit Invalidator(NotifyFn notify);
  ~Invalidator();

  void Start();
  void Stop();

  // Queues the invalidation of bytes [offset, offset + length) of ino and
  // waits until the notify function has returned or `wait` has passed.
  // Returns the notify function's result, or -ETIMEDOUT if the wait ended
  // first (the notice stays queued), or -ENOTCONN if the thread is not
  // running.
  int Invalidate(uint64_t ino, int64_t offset, int64_t length, std::chrono::milliseconds wait);

  // Queues the invalidation of bytes [offset, offset + length) of ino, to
  // be sent no earlier than `delay` from now, and returns at once (nothing
  // if the thread is not running). For the kernel's own cache changes that
  // follow the daemon's answer (see sparse_ops.cc).
  void Post(uint64_t ino, int64_t offset, int64_t length, std::chrono::milliseconds delay);

  Invalidator(const Invalidator&) = delete;
  Invalidator& operator=(const Invalidator&) = delete;

 private:
  struct Notice {
    uint64_t ino;
    int64_t offset;
    int64_t length;
    std::chrono::steady_clock::time_point not_before{};
    bool done = false;
    int result = 0;
  };

  void Run(std::stop_token stop);

  const NotifyFn notify_;

  // Guards queue_, running_ and every Notice's done and result. A leaf:
  // notify_ runs without it.
  std::mutex mu_;
  std::condition_variable_any work_;  // a notice was queued, or stop
  std::condition_variable done_;      // a notice was done
  std::deque<std::shared_ptr<Notice>> queue_;
  bool running_ = false;
  std::jthread thread_;
};

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_INVALIDATOR_H_
