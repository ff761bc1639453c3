#include "convert.h"

#include <string>
#include <string_view>
#include <type_traits>

#include "errors.h"

namespace slabfs::python {

Slab MakeSlab(const Index& start, const Index& stride, const Index& count) {
  if (start.size() != stride.size() || start.size() != count.size())
    throw py::value_error("start, stride and count differ in length");
  Slab s;
  s.dims.resize(start.size());
  for (size_t d = 0; d < start.size(); ++d) s.dims[d] = DimSlab{start[d], stride[d], count[d], 1};
  return s;
}

py::dtype NumpyDType(DType t) { return py::dtype("<" + std::string(DTypeName(t))); }

void CheckBuffer(const py::array& a, DType t, uint64_t elements, bool writeable, const char* what) {
  if (!a.dtype().is(NumpyDType(t)) && !a.dtype().equal(NumpyDType(t)))
    throw py::type_error(std::string(what) + " has dtype " + py::str(a.dtype()).cast<std::string>() + ", the dataset " +
                         std::string(DTypeName(t)));
  if (!(a.flags() & py::array::c_style)) throw py::value_error(std::string(what) + " is not C-contiguous");
  if (writeable && !a.writeable()) throw py::value_error(std::string(what) + " is read-only");
  if (static_cast<uint64_t>(a.size()) != elements)
    throw py::value_error(std::string(what) + " holds " + std::to_string(a.size()) + " elements, the selection " +
                          std::to_string(elements));
}

namespace {
py::tuple DimsTuple(const Dims& d) {
  py::tuple t(d.size());
  for (size_t i = 0; i < d.size(); ++i) t[i] = py::int_(d[i]);
  return t;
}
}  // namespace

// The keys are DatasetInfo's field names, but for "maxshape" (h5py's name,
// None for an unlimited dimension); num_elements and size_bytes are left
// out (Dataset.size and .nbytes follow from the shape).
py::dict InfoDict(const DatasetInfo& i) {
  py::dict d;
  VisitFields(i, [&d](std::string_view name, const auto& value) {
    using T = std::decay_t<decltype(value)>;
    py::str key(name.data(), name.size());
    if constexpr (std::is_same_v<T, DType>) {
      d[key] = std::string(DTypeName(value));
    } else if constexpr (std::is_same_v<T, IndexKind>) {
      d[key] = std::string(IndexKindName(value));
    } else if constexpr (std::is_same_v<T, Dims>) {
      if (name != "max_shape") {
        d[key] = DimsTuple(value);
        return;
      }
      py::tuple maxshape(value.size());
      for (size_t k = 0; k < value.size(); ++k)
        maxshape[k] = value[k] == kUnlimited ? py::object(py::none()) : py::object(py::int_(value[k]));
      d["maxshape"] = maxshape;
    } else if constexpr (std::is_same_v<T, std::string>) {
      d[key] = name == "fill" ? py::object(py::bytes(value)) : py::object(py::str(value));
    } else if constexpr (std::is_same_v<T, bool>) {
      d[key] = value;
    } else {
      static_assert(std::is_same_v<T, uint64_t>);
      if (name == "num_elements" || name == "size_bytes") return;
      d[key] = value;
    }
  });
  return d;
}

py::tuple AttributeTuple(const Attribute& a) {
  if (a.kind == Attribute::Kind::kString) return py::make_tuple("string", py::none(), py::bytes(a.data));
  return py::make_tuple("numeric", std::string(DTypeName(a.dtype)), py::bytes(a.data));
}

Attribute AttributeFrom(const std::string& kind, const std::string& dtype, const py::bytes& data) {
  if (kind == "string") return Attribute::String(std::string(data));
  if (kind != "numeric") throw py::value_error("attribute kind must be 'string' or 'numeric'");
  return Attribute::Numbers(Value(ParseDType(dtype)), std::string(data));
}

Dims MaxShapeDims(const std::vector<std::optional<uint64_t>>& maxshape) {
  Dims d;
  d.reserve(maxshape.size());
  for (const auto& m : maxshape) d.push_back(m ? *m : kUnlimited);
  return d;
}

}  // namespace slabfs::python
