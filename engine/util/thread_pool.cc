#include "engine/util/thread_pool.h"

#include <atomic>
#include <deque>
#include <exception>
#include <memory>
#include <thread>
#include <vector>

#include "engine/util/mutex.h"

namespace slabfs::engine {
namespace {

thread_local bool tls_in_worker = false;

// One ParallelFor call: workers and the caller take indices until none are
// left. An exception (std::bad_alloc from a chunk-sized buffer) is caught
// where it happens, so that no worker dies and every index is still counted
// done; the caller rethrows the first one once all are.
struct Job {
  size_t n;
  const std::function<void(size_t)>* fn;
  std::atomic<size_t> next{0};
  std::atomic<size_t> done{0};
  Mutex mu{LockRank::kThreadPool};
  CondVar finished;
  std::exception_ptr error GUARDED_BY(mu);

  void Work() {
    size_t i;
    while ((i = next.fetch_add(1)) < n) {
      try {
        (*fn)(i);
      } catch (...) {
        MutexLock lock(mu);
        if (!error) error = std::current_exception();
      }
      if (done.fetch_add(1) + 1 == n) {
        MutexLock lock(mu);
        finished.NotifyAll();
      }
    }
  }
};

class Pool {
 public:
  explicit Pool(size_t workers) {
    for (size_t i = 0; i < workers; ++i) threads_.emplace_back([this] { Loop(); });
  }
  ~Pool() {
    {
      MutexLock lock(mu_);
      stop_ = true;
    }
    cv_.NotifyAll();
    for (auto& t : threads_) t.join();
  }
  size_t workers() const { return threads_.size(); }

  void Run(size_t n, const std::function<void(size_t)>& fn) {
    auto job = std::make_shared<Job>();
    job->n = n;
    job->fn = &fn;
    {
      MutexLock lock(mu_);
      for (size_t i = 0; i + 1 < n && i < threads_.size(); ++i) queue_.push_back(job);
    }
    cv_.NotifyAll();
    job->Work();
    MutexLock lock(job->mu);
    while (job->done.load() != n) job->finished.Wait(job->mu);
    if (job->error) std::rethrow_exception(job->error);
  }

 private:
  void Loop() {
    tls_in_worker = true;
    for (;;) {
      std::shared_ptr<Job> job;
      {
        MutexLock lock(mu_);
        while (!stop_ && queue_.empty()) cv_.Wait(mu_);
        if (stop_ && queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job->Work();
    }
  }

  Mutex mu_{LockRank::kThreadPool};
  CondVar cv_;
  std::deque<std::shared_ptr<Job>> queue_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

Pool& GlobalPool() {
  static Pool pool(std::max(1u, std::thread::hardware_concurrency()) - 1);
  return pool;
}

}  // namespace

size_t ParallelWidth() { return GlobalPool().workers() + 1; }

void ParallelFor(size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  if (n == 1 || tls_in_worker || GlobalPool().workers() == 0) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  GlobalPool().Run(n, fn);
}

}  // namespace slabfs::engine
