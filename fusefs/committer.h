// The periodic commit: a background thread that, every `interval`, commits
// when there are uncommitted changes. (The follow mount's refresh runs on
// one too: any periodic step with a "whether" and a "do", named `what` in
// its log lines.)
//
// The two functions are given rather than a Container so that the thread's
// lifetime rules can be tested on their own. Start launches the thread;
// Stop wakes it, waits for a commit in progress to finish and joins. Both
// are idempotent; the destructor stops. Start and Stop must not race each
// other (the daemon calls them from init and destroy); `dirty` and `commit`
// run on the background thread and must be thread-safe.
#ifndef SLABFS_FUSEFS_COMMITTER_H_
#define SLABFS_FUSEFS_COMMITTER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "slabfs/status.h"

namespace slabfs::fusefs {

class Committer {
 public:
  using DirtyFn = std::function<bool()>;
  using CommitFn = std::function<Status()>;

  // A zero interval makes Start a no-op.
  Committer(std::chrono::milliseconds interval, DirtyFn dirty, CommitFn commit, std::string what = "periodic commit");
  ~Committer();

  void Start();
  void Stop();

  // Commits attempted by the thread so far (for tests and logs).
  uint64_t commits() const;

  Committer(const Committer&) = delete;
  Committer& operator=(const Committer&) = delete;

 private:
  void Run(std::stop_token stop);

  const std::chrono::milliseconds interval_;
  const DirtyFn dirty_;
  const CommitFn commit_;
  const std::string what_;

  // Guards commits_ and is the condition variable's mutex. A leaf: dirty_
  // and commit_ run without it.
  mutable std::mutex mu_;
  std::condition_variable_any wake_;
  uint64_t commits_ = 0;
  std::jthread thread_;
};

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_COMMITTER_H_
