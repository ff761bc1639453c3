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

int Invalidator::Invalidate(uint64_t ino, int64_t offset, int64_t length,
                            std::chrono::milliseconds wait) {
  auto notice = std::make_shared<Notice>(Notice{.ino = ino, .offset = offset, .length = length});
  std::unique_lock lock(mu_);
  if (!running_) return -ENOTCONN;
  queue_.push_back(notice);
  work_.notify_one();
  if (!done_.wait_for(lock, wait, [&] { return notice->done; })) return -ETIMEDOUT;
  return notice->result;
}

void Invalidator::Run(std::stop_token stop) {
  std::unique_lock lock(mu_);
  for (;;) {
    if (!work_.wait(lock, stop, [&] { return !queue_.empty(); })) return;  // stopped
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
