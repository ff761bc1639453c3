// _slabfs.DatasetHandle: hyperslab reads and writes straight between a
// dataset and numpy arrays the caller allocated (no copy in between, the
// GIL released), plus resize, erase and the defined-element queries. The
// Python package (slabfs/dataset.py) turns numpy indexing into the
// start/stride/count lists these take.
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bind.h"
#include "convert.h"
#include "errors.h"

namespace slabfs::python {

std::atomic<int> g_io_gil_state{-1};

namespace {

DType TypeOf(const DatasetHandle& h) {
  return Value(h.owner->Run([&](Container&) -> Result<DType> { return h.ds.info().dtype; }));
}

// `mem` as a MemSpace over the whole of the array `a`, or none.
std::optional<MemSpace> MemSpaceOf(const py::array& a, const std::optional<Index>& start,
                                   const std::optional<Index>& stride, const std::optional<Index>& count) {
  if (!start) return std::nullopt;
  MemSpace m;
  m.shape.assign(a.shape(), a.shape() + a.ndim());
  m.selection = MakeSlab(*start, stride.value_or(Index{}), count.value_or(Index{}));
  return m;
}

void Read(const DatasetHandle& h, const Index& start, const Index& stride, const Index& count, py::array out,
          const std::optional<Index>& mem_start, const std::optional<Index>& mem_stride,
          const std::optional<Index>& mem_count) {
  Slab sel = MakeSlab(start, stride, count);
  std::optional<MemSpace> mem = MemSpaceOf(out, mem_start, mem_stride, mem_count);
  uint64_t elements = mem ? static_cast<uint64_t>(out.size()) : sel.num_elements();
  CheckBuffer(out, TypeOf(h), elements, /*writeable=*/true, "the destination array");
  void* buf = out.mutable_data();
  Check(WithoutGil(*h.owner, [&](Container&) { return h.ds.Read(sel, buf, mem ? &*mem : nullptr); }));
}

void Write(DatasetHandle& h, const Index& start, const Index& stride, const Index& count, py::array src,
           const std::optional<Index>& mem_start, const std::optional<Index>& mem_stride,
           const std::optional<Index>& mem_count) {
  Slab sel = MakeSlab(start, stride, count);
  std::optional<MemSpace> mem = MemSpaceOf(src, mem_start, mem_stride, mem_count);
  uint64_t elements = mem ? static_cast<uint64_t>(src.size()) : sel.num_elements();
  CheckBuffer(src, TypeOf(h), elements, /*writeable=*/false, "the source array");
  const void* buf = src.data();
  Check(WithoutGil(*h.owner, [&](Container&) { return h.ds.Write(sel, buf, mem ? &*mem : nullptr); }));
}

}  // namespace

void BindDataset(py::module_& m) {
  py::class_<DatasetHandle>(m, "DatasetHandle", "A dataset of an open container (low level; use slabfs.Dataset).")
      .def_property_readonly("id", [](const DatasetHandle& h) { return h.ds.id(); })
      .def_property_readonly("container", [](const DatasetHandle& h) { return h.owner; })
      .def("info",
           [](const DatasetHandle& h) {
             auto r = h.owner->Run([&](Container&) -> Result<DatasetInfo> { return h.ds.info(); });
             return InfoDict(Value(std::move(r)));
           })
      .def("read", &Read, py::arg("start"), py::arg("stride"), py::arg("count"), py::arg("out"),
           py::arg("mem_start") = py::none(), py::arg("mem_stride") = py::none(), py::arg("mem_count") = py::none(),
           "Reads the selection into `out` (C-contiguous, the dataset's dtype), or into the selection "
           "mem_* of `out` when given.")
      .def("write", &Write, py::arg("start"), py::arg("stride"), py::arg("count"), py::arg("src"),
           py::arg("mem_start") = py::none(), py::arg("mem_stride") = py::none(), py::arg("mem_count") = py::none(),
           "Writes `src` (C-contiguous, the dataset's dtype), or its selection mem_*, to the selection.")
      .def("resize",
           [](DatasetHandle& h, const Index& shape) {
             Check(WithoutGil(*h.owner, [&](Container&) { return h.ds.Resize(shape); }));
           })
      .def("clear", [](DatasetHandle& h) { Check(WithoutGil(*h.owner, [&](Container&) { return h.ds.Clear(); })); })
      .def("erase",
           [](DatasetHandle& h, const Index& start, const Index& stride, const Index& count) {
             Slab sel = MakeSlab(start, stride, count);
             Check(WithoutGil(*h.owner, [&](Container&) { return h.ds.Erase(sel); }));
           })
      .def(
          "defined",
          [](const DatasetHandle& h, const Index& start, const Index& count) {
            Slab sel = Slab::Box(start, count);
            auto boxes = Value(WithoutGil(*h.owner, [&](Container&) { return h.ds.Defined(sel); }));
            py::list out;
            for (const Box& b : boxes)
              out.append(py::make_tuple(py::tuple(py::cast(b.start)), py::tuple(py::cast(b.count))));
            return out;
          },
          "The defined elements inside the box, as a list of (start, count) tuples in C order.")
      .def("count_defined", [](const DatasetHandle& h) {
        return Value(WithoutGil(*h.owner, [&](Container&) { return h.ds.CountDefined(); }));
      });
}

}  // namespace slabfs::python
