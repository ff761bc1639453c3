// slabfs._slabfs: the extension module under the slabfs Python package.
#include <pybind11/pybind11.h>

#include "bind.h"

PYBIND11_MODULE(_slabfs, m) {
  m.doc() = "Low-level binding of the slabfs C++ API; the slabfs package builds File, Group and Dataset on it.";
  slabfs::python::BindContainer(m);
  slabfs::python::BindDataset(m);
}
