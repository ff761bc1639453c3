// The one table from slabfs Status codes to Python exceptions.
#include "errors.h"

#include <Python.h>
#include <pybind11/pybind11.h>

#include <cerrno>
#include <string>
#include <string_view>

namespace slabfs::python {

namespace py = pybind11;

namespace {

// The exception class and whether it is an OSError(errno, message, filename).
struct Mapping {
  PyObject* type;
  bool os_error;
};

Mapping MappingOf(Code code, ErrorContext ctx) {
  switch (code) {
    case Code::kNotFound:
      // A missing file, or a dataset that is gone under a live handle.
      if (ctx == ErrorContext::kFile || ctx == ErrorContext::kData) return {PyExc_OSError, true};
      return {PyExc_KeyError, false};
    case Code::kAlreadyExists:
      if (ctx == ErrorContext::kFile) return {PyExc_OSError, true};
      return {PyExc_ValueError, false};
    case Code::kNotAGroup:
    case Code::kNotADataset:
      if (ctx == ErrorContext::kLookup) return {PyExc_KeyError, false};
      return {PyExc_TypeError, false};
    case Code::kInvalidArgument:
    case Code::kOutOfRange:
      // Selections are checked in Python first (IndexError as numpy); what
      // reaches the engine wrong is a bad value: shape, dtype, name, size.
      return {PyExc_ValueError, false};
    default: return {PyExc_OSError, true};
  }
}

// The text of an OSError that names its file: Python prints it as
// "[Errno N] TEXT: 'FILENAME'", so TEXT leaves out the file's name (which
// the engine's message starts with) and the code's name (which the errno
// and the exception class say): "[Errno 2] No such file or directory:
// 'run.slab'", as open() says, not the path three times.
std::string FileErrorText(const Status& s, const std::string& filename) {
  std::string_view text = s.message();
  if (text.starts_with(filename + ": ")) {
    text.remove_prefix(filename.size() + 2);
  } else if (text.starts_with(filename + " is ")) {
    text.remove_prefix(filename.size() + 4);  // "run.slab is not a slabfs container"
  }
  return text.empty() ? std::string(CodeName(s.code())) : std::string(text);
}

}  // namespace

void Raise(const Status& s, ErrorContext ctx, const std::string& filename) {
  Mapping m = MappingOf(s.code(), ctx);
  py::object exc;
  if (m.os_error) {
    // OSError(errno, text[, filename]) becomes FileNotFoundError,
    // FileExistsError, PermissionError, ... by its errno, as open() does.
    py::object type = py::reinterpret_borrow<py::object>(m.type);
    if (filename.empty())
      exc = type(slabfs::ErrnoOf(s.code()), s.ToString());
    else
      exc = type(slabfs::ErrnoOf(s.code()), FileErrorText(s, filename), filename);
  } else {
    exc = py::reinterpret_borrow<py::object>(m.type)(s.message());
  }
  exc.attr("slabfs_code") = std::string(CodeName(s.code()));
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
  throw py::error_already_set();
}

}  // namespace slabfs::python
