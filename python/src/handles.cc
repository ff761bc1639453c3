#include "handles.h"

#include <Python.h>

namespace slabfs::python {

Status ClosedStatus(const std::string& path) { return Status::InvalidArgument("container " + path + " is closed"); }

Status ForkedStatus(const std::string& path, pid_t opener) {
  return Status::InvalidArgument("container " + path + " was opened for writing by process " + std::to_string(opener) +
                                 "; a forked child must open it itself");
}

OpenContainer::~OpenContainer() {
  if (!read_only_ && getpid() != pid_) {
    // The parent's container, copied by fork: closing would commit.
    (void)c_.release();
    return;
  }
  Status s = Close(/*commit=*/true);
  // Called by Python's garbage collector with the GIL held: a failed commit
  // can only be a warning now (close the file explicitly to get the error).
  if (!s.ok() && Py_IsInitialized()) {
    std::string msg = "slabfs: closing " + path_ + " without close(): " + s.ToString();
    if (PyErr_WarnEx(PyExc_RuntimeWarning, msg.c_str(), 1) < 0) PyErr_WriteUnraisable(nullptr);
  }
}

Status OpenContainer::Close(bool commit) {
  std::unique_lock lock(mu_);
  if (!c_) return Status::OK();
  if (!read_only_ && getpid() != pid_) return ForkedStatus(path_, pid_);
  Status s;
  if (commit)
    s = c_->Close();
  else
    c_->Discard();
  c_.reset();
  return s;
}

}  // namespace slabfs::python
