// Conversions between Python values and the slabfs value types: selections
// given as lists, numpy dtypes, attributes, dataset descriptions.
#ifndef SLABFS_PYTHON_CONVERT_H_
#define SLABFS_PYTHON_CONVERT_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "slabfs/slabfs.h"

namespace slabfs::python {

namespace py = pybind11;

using Index = std::vector<uint64_t>;

// A hyperslab from per-dimension start, stride and count (block 1). The
// three lists must have the same length (ValueError otherwise).
Slab MakeSlab(const Index& start, const Index& stride, const Index& count);

// The little-endian numpy dtype of an element type ("<f4").
py::dtype NumpyDType(DType t);

// Checks that `a` can take part in a transfer of `elements` elements of
// type t without a copy: dtype t, C-contiguous, `elements` elements, and
// writeable when `writeable`. Raises ValueError or TypeError otherwise.
void CheckBuffer(const py::array& a, DType t, uint64_t elements, bool writeable, const char* what);

// DatasetInfo as a dict: dtype, shape, maxshape (None for unlimited),
// chunks, fill (bytes), index, filters, sparse, length_resizable,
// num_chunks, allocated_chunks, stored_bytes, index_bytes, defined_elements.
py::dict InfoDict(const DatasetInfo& i);

// An attribute as (kind, dtype, data): ("string", None, bytes) or
// ("numeric", "f8", bytes), and back.
py::tuple AttributeTuple(const Attribute& a);
Attribute AttributeFrom(const std::string& kind, const std::string& dtype, const py::bytes& data);

// A list of Python ints (None for unlimited) as max-shape dims.
Dims MaxShapeDims(const std::vector<std::optional<uint64_t>>& maxshape);

}  // namespace slabfs::python

#endif  // SLABFS_PYTHON_CONVERT_H_
