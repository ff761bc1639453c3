// slabfs Status codes as Python exceptions, in one table (errors.cc).
//
// The exception depends on what the call was about, as h5py and the
// standard library do: a missing name is KeyError, a missing file
// FileNotFoundError. Every exception carries the Status code name in the
// attribute `slabfs_code` ("corruption", "busy", ...). A file that is not
// a container is OSError(ENOTSUP, "... is not a slabfs container"), as
// h5py raises OSError for a file that is not HDF5; EIO means damage
// (Corruption) only.
#ifndef SLABFS_PYTHON_ERRORS_H_
#define SLABFS_PYTHON_ERRORS_H_

#include <string>
#include <utility>

#include "slabfs/status.h"

namespace slabfs::python {

enum class ErrorContext {
  kData,    // a transfer, resize or other call on existing objects
  kLookup,  // resolving a name: NotFound, NotAGroup, NotADataset -> KeyError
  kCreate,  // creating a name: AlreadyExists -> ValueError (as h5py)
  kFile,    // opening a container: NotFound -> FileNotFoundError,
            // AlreadyExists -> FileExistsError, with the file name
};

// Sets the Python exception for a non-OK status and throws
// pybind11::error_already_set. Call with the GIL held.
[[noreturn]] void Raise(const Status& s, ErrorContext ctx = ErrorContext::kData, const std::string& filename = "");

inline void Check(const Status& s, ErrorContext ctx = ErrorContext::kData, const std::string& filename = "") {
  if (!s.ok()) Raise(s, ctx, filename);
}

template <typename T>
T Value(Result<T>&& r, ErrorContext ctx = ErrorContext::kData, const std::string& filename = "") {
  if (!r.has_value()) Raise(r.error(), ctx, filename);
  return std::move(*r);
}

}  // namespace slabfs::python

#endif  // SLABFS_PYTHON_ERRORS_H_
