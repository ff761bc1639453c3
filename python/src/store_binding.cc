// _slabfs.Store: a foreign file -- an HDF5 or netCDF-4 file -- open
// read-only through the store interface (include/slabfs/store.h), with the
// methods of _slabfs.Container that read, so that slabfs.File(path, 'r')
// builds the same Group, Dataset and attrs on it; _slabfs.StoreDatasetHandle
// is its DatasetHandle. Every method that would change the file raises
// OSError(EROFS) naming it: slabfs changes only slab containers.
//
// libhdf5 runs only while the store opens (after that reads are preads and
// slabfs's own decoding): the open holds the GIL, so that it never runs
// beside h5py's calls into the same libhdf5 in this process, which hold the
// GIL too. Reads release it, as a container's do.
//
// Built without the HDF5 store (no libhdf5 when the module was built),
// opening raises OSError(ENOTSUP) saying so (stores/open_store.h).
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "bind.h"
#include "convert.h"
#include "errors.h"
#include "slabfs/store.h"
#include "stores/open_store.h"
#include "stores/store_format.h"

namespace slabfs::python {

namespace {

using Ctx = ErrorContext;

// An open store and the lock that keeps its handles from outliving a
// close (as OpenContainer; a store is read-only, so closing only releases).
class OpenStore {
 public:
  OpenStore(std::unique_ptr<Store> s, std::string path) : s_(std::move(s)), path_(std::move(path)) {
    format_ = std::string(s_->format());
  }

  template <typename F>
  auto Run(F&& f) const -> decltype(f(std::declval<const Store&>())) {
    std::shared_lock lock(mu_);
    if (!s_) return Err(ClosedStatus(path_));
    return f(*s_);
  }
  void Close() {
    std::unique_lock lock(mu_);
    s_.reset();
  }
  bool closed() const {
    std::shared_lock lock(mu_);
    return s_ == nullptr;
  }
  const std::string& path() const { return path_; }
  const std::string& format() const { return format_; }

  // What every change answers: OSError(EROFS).
  [[noreturn]] void RaiseReadOnly() const {
    const char* what = format_ == "zarr" ? "a Zarr store" : "an HDF5 file";
    Raise(Status::ReadOnly(path_ + " is " + what +
                           ", open read-only: slabfs changes only slab containers (`slab import` copies it into one)"));
  }

 private:
  mutable std::shared_mutex mu_;
  std::unique_ptr<Store> s_;  // null once closed
  const std::string path_;
  std::string format_;
};

struct StoreDatasetHandle {
  std::shared_ptr<OpenStore> owner;
  std::shared_ptr<const StoreDataset> ds;
  ObjectId id;
};

// Runs f(const Store&) without the GIL (see WithoutGil in bind.h).
template <typename F>
auto StoreWithoutGil(const OpenStore& s, F&& f) {
  py::gil_scoped_release nogil;
  g_io_gil_state.store(PyGILState_Check(), std::memory_order_relaxed);
  return s.Run(std::forward<F>(f));
}

// An HDF5 file (netCDF-4 too) or a Zarr store, by its signature.
std::shared_ptr<OpenStore> OpenForeign(const std::string& path, uint64_t cache_bytes) {
  stores::ForeignStoreOptions o;
  o.cache_bytes = cache_bytes;
  stores::StoreFormat format = Value(stores::DetectStoreFormat(path), Ctx::kFile, path);
  if (format != stores::StoreFormat::kHdf5 && format != stores::StoreFormat::kZarr)
    Raise(Status::NotSupported(path + " is a " + std::string(stores::StoreFormatName(format)) +
                               " file, not an HDF5 file or a Zarr store"));
  // With the GIL held: see the file comment. A build without libhdf5 (or
  // without blosc, for Zarr) answers NotSupported, saying so.
  auto opened = Value(stores::OpenForeignStore(path, format, o), Ctx::kFile, path);
  return std::make_shared<OpenStore>(std::move(opened), path);
}

// "slab", "hdf5", "zarr", "netcdf3", or "other" for a path that is none of
// them or cannot be read.
std::string FileFormat(const std::string& path) {
  auto f = stores::DetectStoreFormat(path);
  return f ? std::string(stores::StoreFormatName(*f)) : std::string("other");
}

const char* StoreKindName(ObjectKind k) { return k == ObjectKind::kGroup ? "group" : "dataset"; }

Slab MakeSel(const Index& start, const Index& stride, const Index& count) { return MakeSlab(start, stride, count); }

}  // namespace

void BindStore(py::module_& m) {
  m.def("file_format", &FileFormat, py::arg("path"),
        "What `path` holds by its signature (stores/store_format.h): \"slab\", \"hdf5\" (HDF5 or netCDF-4), "
        "\"zarr\", \"netcdf3\", or \"other\".");
  m.def(
      "has_hdf5_store", [] { return stores::StoreFormatBuilt(stores::StoreFormat::kHdf5); },
      "Whether this module can open HDF5 and netCDF-4 files.");
  m.def(
      "has_zarr_store", [] { return stores::StoreFormatBuilt(stores::StoreFormat::kZarr); },
      "Whether this module can open Zarr v2 and v3 directory stores.");

  py::class_<OpenStore, std::shared_ptr<OpenStore>>(m, "Store",
                                                    "A foreign file open read-only (low level; use slabfs.File).")
      .def_static("open", &OpenForeign, py::arg("path"), py::arg("cache_bytes"))
      .def(
          "close",
          [](OpenStore& s, bool commit) {
            (void)commit;
            py::gil_scoped_release nogil;
            s.Close();
          },
          py::arg("commit") = true)
      .def_property_readonly("closed", &OpenStore::closed)
      .def_property_readonly("path", &OpenStore::path)
      .def_property_readonly("format", &OpenStore::format)
      .def_property_readonly("read_only", [](const OpenStore&) { return true; })
      .def_property_readonly("dirty", [](const OpenStore&) { return false; })
      .def("commit", [](const OpenStore&) {})
      .def("refresh",
           [](const OpenStore& s) -> py::dict {
             Raise(Status::NotSupported(s.path() + ": an HDF5 file is read as it was when it was opened (no refresh); "
                                                   "open it again to see a writer's changes"));
           })
      .def("resolve",
           [](const OpenStore& s, const std::string& path) {
             return Value(StoreWithoutGil(s, [&](const Store& k) { return k.Resolve(path); }), Ctx::kLookup);
           })
      .def("lookup",
           [](const OpenStore& s, ObjectId parent, const std::string& name) {
             return Value(StoreWithoutGil(s, [&](const Store& k) { return k.Lookup(parent, name); }), Ctx::kLookup);
           })
      .def("stat",
           [](const OpenStore& s, ObjectId id) {
             ObjectInfo i = Value(StoreWithoutGil(s, [&](const Store& k) { return k.Stat(id); }), Ctx::kLookup);
             py::dict d;
             d["kind"] = StoreKindName(i.kind);
             d["num_children"] = i.num_children;
             d["size_bytes"] = i.size_bytes;
             d["stored_bytes"] = i.stored_bytes;
             return d;
           })
      .def("list",
           [](const OpenStore& s, ObjectId group) {
             auto entries = Value(StoreWithoutGil(s, [&](const Store& k) { return k.List(group); }), Ctx::kLookup);
             py::list out;
             for (const Entry& e : entries) out.append(py::make_tuple(e.name, e.id, StoreKindName(e.kind)));
             return out;
           })
      .def("path_of",
           [](const OpenStore& s, ObjectId id) {
             return Value(StoreWithoutGil(s, [&](const Store& k) { return k.PathOf(id); }), Ctx::kLookup);
           })
      .def("create_group", [](const OpenStore& s, ObjectId, const std::string&) -> ObjectId { s.RaiseReadOnly(); })
      .def("make_groups", [](const OpenStore& s, const std::string&, bool) -> ObjectId { s.RaiseReadOnly(); })
      .def(
          "create_dataset",
          [](const OpenStore& s, ObjectId, const std::string&, const std::string&, const Index&,
             const std::vector<std::optional<uint64_t>>&, const Index&, const py::bytes&, const std::string&, bool,
             const std::string&) -> py::object { s.RaiseReadOnly(); },
          py::arg("parent"), py::arg("name"), py::arg("dtype"), py::arg("shape"), py::arg("maxshape"),
          py::arg("chunks"), py::arg("fill"), py::arg("filters"), py::arg("sparse"), py::arg("index"))
      .def("open_dataset",
           [](const std::shared_ptr<OpenStore>& s, ObjectId id) {
             auto ds = Value(StoreWithoutGil(*s, [&](const Store& k) { return k.OpenDataset(id); }), Ctx::kLookup);
             return StoreDatasetHandle{s, std::move(ds), id};
           })
      .def("remove", [](const OpenStore& s, ObjectId, const std::string&) { s.RaiseReadOnly(); })
      .def("rename", [](const OpenStore& s, ObjectId, const std::string&, ObjectId, const std::string&,
                        bool) { s.RaiseReadOnly(); })
      .def("attr_names",
           [](const OpenStore& s, ObjectId id) {
             return Value(StoreWithoutGil(s, [&](const Store& k) { return k.ListAttributes(id); }), Ctx::kLookup);
           })
      .def("get_attr",
           [](const OpenStore& s, ObjectId id, const std::string& name) {
             Attribute a =
                 Value(StoreWithoutGil(s, [&](const Store& k) { return k.GetAttribute(id, name); }), Ctx::kLookup);
             return AttributeTuple(a);
           })
      .def("set_attr", [](const OpenStore& s, ObjectId, const std::string&, const std::string&, const std::string&,
                          const py::bytes&) { s.RaiseReadOnly(); })
      .def("del_attr", [](const OpenStore& s, ObjectId, const std::string&) { s.RaiseReadOnly(); })
      .def("cache_stats",
           [](const OpenStore& s) {
             auto r = s.Run([](const Store& k) -> Result<CacheStats> { return k.cache_stats(); });
             CacheStats c = Value(std::move(r));
             py::dict d;
             VisitFields(c,
                         [&d](std::string_view name, uint64_t value) { d[py::str(name.data(), name.size())] = value; });
             return d;
           })
      .def("space",
           [](const OpenStore& s) -> py::dict {
             Raise(Status::NotSupported(s.path() + ": space() describes a slab container's free space"));
           })
      .def(
          "skipped",
          [](const OpenStore& s) {
            auto r = s.Run([](const Store& k) -> Result<std::vector<SkippedObject>> { return k.Skipped(); });
            py::list out;
            for (const SkippedObject& o : Value(std::move(r))) out.append(py::make_tuple(o.path, o.reason));
            return out;
          },
          "What the store leaves out, as (path, reason) tuples in the order it met them.");

  py::class_<StoreDatasetHandle>(m, "StoreDatasetHandle",
                                 "A dataset of an open foreign file (low level; use slabfs.Dataset).")
      .def_property_readonly("id", [](const StoreDatasetHandle& h) { return h.id; })
      .def_property_readonly("container", [](const StoreDatasetHandle& h) { return h.owner; })
      .def("info",
           [](const StoreDatasetHandle& h) {
             auto r = h.owner->Run([&](const Store&) -> Result<StoreDatasetInfo> { return h.ds->info(); });
             StoreDatasetInfo i = Value(std::move(r));
             py::dict d = InfoDict(i.dataset);
             d["scalar"] = i.scalar;
             return d;
           })
      .def(
          "read",
          [](const StoreDatasetHandle& h, const Index& start, const Index& stride, const Index& count, py::array out,
             const std::optional<Index>& mem_start, const std::optional<Index>& mem_stride,
             const std::optional<Index>& mem_count) {
            Slab sel = MakeSel(start, stride, count);
            std::optional<MemSpace> mem;
            if (mem_start) {
              mem.emplace();
              mem->shape.assign(out.shape(), out.shape() + out.ndim());
              mem->selection = MakeSlab(*mem_start, mem_stride.value_or(Index{}), mem_count.value_or(Index{}));
            }
            uint64_t elements = mem ? static_cast<uint64_t>(out.size()) : sel.num_elements();
            CheckBuffer(out, h.ds->info().dataset.dtype, elements, /*writeable=*/true, "the destination array");
            void* buf = out.mutable_data();
            Check(StoreWithoutGil(*h.owner, [&](const Store&) { return h.ds->Read(sel, buf, mem ? &*mem : nullptr); }));
          },
          py::arg("start"), py::arg("stride"), py::arg("count"), py::arg("out"), py::arg("mem_start") = py::none(),
          py::arg("mem_stride") = py::none(), py::arg("mem_count") = py::none(),
          "Reads the selection into `out` (C-contiguous, the dataset's dtype), or into the selection "
          "mem_* of `out` when given.")
      .def(
          "write",
          [](const StoreDatasetHandle& h, const Index&, const Index&, const Index&, const py::array&,
             const std::optional<Index>&, const std::optional<Index>&,
             const std::optional<Index>&) { h.owner->RaiseReadOnly(); },
          py::arg("start"), py::arg("stride"), py::arg("count"), py::arg("src"), py::arg("mem_start") = py::none(),
          py::arg("mem_stride") = py::none(), py::arg("mem_count") = py::none(),
          "Raises OSError(EROFS): a foreign file is read-only.")
      .def("resize", [](const StoreDatasetHandle& h, const Index&) { h.owner->RaiseReadOnly(); })
      .def("clear", [](const StoreDatasetHandle& h) { h.owner->RaiseReadOnly(); })
      .def("erase",
           [](const StoreDatasetHandle& h, const Index&, const Index&, const Index&) { h.owner->RaiseReadOnly(); })
      .def(
          "defined",
          [](const StoreDatasetHandle& h, const Index& start, const Index& count) {
            Slab sel = Slab::Box(start, count);
            auto boxes = Value(StoreWithoutGil(*h.owner, [&](const Store&) { return h.ds->Defined(sel); }));
            py::list out;
            for (const Box& b : boxes)
              out.append(py::make_tuple(py::tuple(py::cast(b.start)), py::tuple(py::cast(b.count))));
            return out;
          },
          "The elements of stored chunks inside the box, as a list of (start, count) tuples in C order.")
      .def("count_defined", [](const StoreDatasetHandle& h) {
        return Value(StoreWithoutGil(*h.owner, [&](const Store&) -> Result<uint64_t> { return h.ds->CountDefined(); }));
      });
}

}  // namespace slabfs::python
