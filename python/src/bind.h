// The parts of the extension module (module.cc puts them together) and the
// helper every binding uses to call the engine without the GIL.
#ifndef SLABFS_PYTHON_BIND_H_
#define SLABFS_PYTHON_BIND_H_

#include <Python.h>
#include <pybind11/pybind11.h>

#include <atomic>
#include <utility>

#include "handles.h"

namespace slabfs::python {

namespace py = pybind11;

void BindContainer(py::module_& m);
void BindDataset(py::module_& m);
void BindStore(py::module_& m);

// Whether the thread held the GIL during the last engine call made through
// WithoutGil: -1 before any, 0 no, 1 yes. For the test that proves the GIL
// is released during I/O (_slabfs._io_gil_state()).
extern std::atomic<int> g_io_gil_state;

// Releases the GIL and runs f(Container&) on c (see OpenContainer::Run);
// returns f's Status or Result. The caller raises with the GIL back.
template <typename F>
auto WithoutGil(const OpenContainer& c, F&& f) {
  py::gil_scoped_release nogil;
  g_io_gil_state.store(PyGILState_Check(), std::memory_order_relaxed);
  return c.Run(std::forward<F>(f));
}

}  // namespace slabfs::python

#endif  // SLABFS_PYTHON_BIND_H_
