#include "fusefs/committer.h"

#include <exception>
#include <utility>

#include "fusefs/log.h"

namespace slabfs::fusefs {

Committer::Committer(std::chrono::milliseconds interval, DirtyFn dirty, CommitFn commit, std::string what)
    : interval_(interval), dirty_(std::move(dirty)), commit_(std::move(commit)), what_(std::move(what)) {}

Committer::~Committer() { Stop(); }

void Committer::Start() {
  if (interval_.count() <= 0 || thread_.joinable()) return;
  thread_ = std::jthread([this](std::stop_token stop) { Run(std::move(stop)); });
}

void Committer::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();  // wakes wait_for through the stop token
  thread_.join();
}

uint64_t Committer::commits() const {
  std::lock_guard lock(mu_);
  return commits_;
}

void Committer::Run(std::stop_token stop) {
  while (true) {
    {
      std::unique_lock lock(mu_);
      // Returns early, with stop requested, when Stop is called.
      wake_.wait_for(lock, stop, interval_, [] { return false; });
    }
    if (stop.stop_requested()) return;
    // Nothing may escape a thread function; a failure is logged and the next
    // tick tries again.
    try {
      if (!dirty_()) continue;
      Status s = commit_();
      {
        std::lock_guard lock(mu_);
        ++commits_;
      }
      if (!s.ok())
        Log().error("{} failed: {}", what_, s.ToString());
      else
        Log().debug("{} done", what_);
    } catch (const std::exception& e) {
      Log().error("{} failed: {}", what_, e.what());
    } catch (...) {
      Log().error("{} failed: unknown exception", what_);
    }
  }
}

}  // namespace slabfs::fusefs
