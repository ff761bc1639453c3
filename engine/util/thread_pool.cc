#include "engine/util/thread_pool.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

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
  std::mutex mu;
  std::condition_variable finished;
  std::exception_ptr error;  // guarded by mu

  void Work() {
    size_t i;
    while ((i = next.fetch_add(1)) < n) {
      try {
        (*fn)(i);
      } catch (...) {
        std::lock_guard lock(mu);
        if (!error) error = std::current_exception();
      }
      if (done.fetch_add(1) + 1 == n) {
        std::lock_guard lock(mu);
        finished.notify_all();
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
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  size_t workers() const { return threads_.size(); }

  void Run(size_t n, const std::function<void(size_t)>& fn) {
    auto job = std::make_shared<Job>();
    job->n = n;
    job->fn = &fn;
    {
      std::lock_guard lock(mu_);
      for (size_t i = 0; i + 1 < n && i < threads_.size(); ++i) queue_.push_back(job);
    }
    cv_.notify_all();
    job->Work();
    std::unique_lock lock(job->mu);
    job->finished.wait(lock, [&] { return job->done.load() == n; });
    if (job->error) std::rethrow_exception(job->error);
  }

 private:
  void Loop() {
    tls_in_worker = true;
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_ && queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job->Work();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stop_ = false;
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
