// slabfs._slabfs: the extension module under the slabfs Python package.
#include <pybind11/pybind11.h>
#include <spdlog/spdlog.h>

#include "bind.h"

PYBIND11_MODULE(_slabfs, m) {
  m.doc() = "Low-level binding of the slabfs C++ API; the slabfs package builds File, Group and Dataset on it.";
  slabfs::python::BindContainer(m);
  slabfs::python::BindDataset(m);
  slabfs::python::BindStore(m);
  // The HDF5 store logs through spdlog's default logger (stdout, level
  // info): its lines go where the engine's go (stderr, set_log_level).
  (void)slabfs::SetLogLevel("warn");
  if (auto engine_log = spdlog::get("slabfs")) spdlog::set_default_logger(engine_log);
}
