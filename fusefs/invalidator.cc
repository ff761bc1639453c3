#include "fusefs/invalidator.h"

#include <cerrno>
#include <utility>

namespace slabfs::fusefs {

Invalidator::Invalidator(NotifyFn notify) : notify_(std::move(notify)) {}

Invalidator::~Invalidator() { Stop(); }

void Invalidator::Start() {
  {
    std::lock_guard lock(mu_);
    if (running_) return;
    running_ = true;
  }
  thread_ = std::jthread([this](std::stop_token stop) { Run(stop); });
}

void Invalidator::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
  std::lock_guard lock(mu_);
  running_ = false;
  // Nobody waits for these any more than its own timeout; they are
  // pointless once the session is gone.
  queue_.clear();
}

int Invalidator::Invalidate(uint64_t ino, int64_t offset, int64_t length, std::chrono::milliseconds wait) {
  auto notice = std::make_shared<Notice>(Notice{.ino = ino, .offset = offset, .length = length});
  std::unique_lock lock(mu_);
  if (!running_) return -ENOTCONN;
  queue_.push_back(notice);
  work_.notify_one();
  if (!done_.wait_for(lock, wait, [&] { return notice->done; })) return -ETIMEDOUT;
  return notice->result;
}

void Invalidator::Post(uint64_t ino, int64_t offset, int64_t length, std::chrono::milliseconds delay) {
  auto notice = std::make_shared<Notice>(
      Notice{.ino = ino, .offset = offset, .length = length, .not_before = std::chrono::steady_clock::now() + delay});
  std::lock_guard lock(mu_);
  if (!running_) return;
  queue_.push_back(std::move(notice));
  work_.notify_one();
}

void Invalidator::Run(std::stop_token stop) {
  std::unique_lock lock(mu_);
  for (;;) {
    if (!work_.wait(lock, stop, [&] { return !queue_.empty(); })) return;  // stopped
    // Notices run in order; a delayed one holds back those queued after it.
    const auto not_before = queue_.front()->not_before;
    if (std::chrono::steady_clock::now() < not_before) {
      work_.wait_until(lock, stop, not_before, [] { return false; });
      if (stop.stop_requested()) return;
      continue;
    }
    std::shared_ptr<Notice> notice = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    const int result = notify_(notice->ino, notice->offset, notice->length);
    lock.lock();
    notice->result = result;
    notice->done = true;
    done_.notify_all();
  }
}

}  // namespace slabfs::fusefs
