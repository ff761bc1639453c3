// What the extension module hands to Python: an open container, with the
// lock that keeps dataset handles from outliving it, and a dataset handle.
//
// Thread safety and the GIL: every call into the container runs through
// OpenContainer::Run, holding mu_ shared, normally with the GIL released
// (many Python threads read at once). Close takes mu_ exclusively, so it
// waits for the calls in flight, and every later call gets "closed" instead
// of touching a released container. Lock order: nothing asks for the GIL
// while holding mu_.
#ifndef SLABFS_PYTHON_HANDLES_H_
#define SLABFS_PYTHON_HANDLES_H_

#include <unistd.h>

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <utility>

#include "slabfs/slabfs.h"

namespace slabfs::python {

// The Status every call on a closed container answers (ValueError in Python).
Status ClosedStatus(const std::string& path);
// What a forked child gets from a container its parent opened for writing:
// the child has none of its locks, and a commit from it would race the
// parent's (ValueError in Python).
Status ForkedStatus(const std::string& path, pid_t opener);

class OpenContainer {
 public:
  OpenContainer(std::unique_ptr<Container> c, std::string path, bool read_only)
      : c_(std::move(c)), path_(std::move(path)), read_only_(read_only), pid_(getpid()) {}
  // Closes (committing a writable container) if still open; a failure is
  // reported as a Python RuntimeWarning, since nothing can be raised here.
  // In a forked child a writable container is abandoned, never committed.
  ~OpenContainer();

  // Runs f(Container&) under the shared lock and returns what it returns
  // (a Status or a Result<T>), or ClosedStatus() once the container is closed.
  template <typename F>
  auto Run(F&& f) const -> decltype(f(std::declval<Container&>())) {
    std::shared_lock lock(mu_);
    if (!c_) return Err(ClosedStatus(path_));
    if (!read_only_ && getpid() != pid_) return Err(ForkedStatus(path_, pid_));
    return f(*c_);
  }

  // Waits for calls in flight, then commits (commit=true) or discards the
  // changes since the last commit, and releases the container. Closing a
  // closed container is OK. The caller releases the GIL.
  Status Close(bool commit);

  bool closed() const {
    std::shared_lock lock(mu_);
    return c_ == nullptr;
  }
  const std::string& path() const { return path_; }
  bool read_only() const { return read_only_; }

 private:
  mutable std::shared_mutex mu_;
  std::unique_ptr<Container> c_;  // null once closed
  const std::string path_;
  const bool read_only_;
  const pid_t pid_;  // the process that opened it
};

// A dataset handle. Holds its container open (Python keeps the owner alive
// as long as any handle), and fails cleanly once it is closed.
struct DatasetHandle {
  std::shared_ptr<OpenContainer> owner;
  Dataset ds;
};

}  // namespace slabfs::python

#endif  // SLABFS_PYTHON_HANDLES_H_
