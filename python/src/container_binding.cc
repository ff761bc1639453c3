// _slabfs.Container: an open container file, its names, groups and
// attributes. The Python package (slabfs/files.py, group.py) builds the
// h5py-like File and Group on it; this layer is a thin, GIL-free call per
// method, with errors raised through errors.cc.
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bind.h"
#include "convert.h"
#include "errors.h"

namespace slabfs::python {

namespace {

using Ctx = ErrorContext;

std::shared_ptr<OpenContainer> Open(const std::string& path, bool read_only, bool create, uint64_t cache_bytes,
                                    uint64_t cache_max_bytes, const std::string& holder) {
  OpenOptions o;
  o.read_only = read_only;
  o.create = create;
  o.cache_bytes = cache_bytes;
  o.cache_max_bytes = cache_max_bytes;
  o.holder = holder;
  Result<std::unique_ptr<Container>> c;
  {
    // Opening may wait (for a daemon finishing its last commit).
    py::gil_scoped_release nogil;
    c = Container::Open(path, o);
  }
  auto opened = Value(std::move(c), Ctx::kFile, path);
  return std::make_shared<OpenContainer>(std::move(opened), path, read_only);
}

const char* KindName(ObjectKind k) { return k == ObjectKind::kGroup ? "group" : "dataset"; }

// Container::Refresh, as a dict.
py::dict Refresh(const OpenContainer& oc) {
  std::optional<Result<RefreshInfo>> r;
  Check(WithoutGil(oc, [&](Container& c) -> Status {
    r.emplace(c.Refresh());
    return Status::OK();
  }));
  RefreshInfo info = Value(std::move(*r));
  py::dict d;
  d["generation"] = info.generation;
  d["changed"] = info.changed;
  d["changed_objects"] = info.changed_objects;
  d["removed_objects"] = info.removed_objects;
  return d;
}

py::dict CacheStatsDict(const CacheStats& s) {
  py::dict d;
  VisitFields(s, [&d](std::string_view name, uint64_t value) { d[py::str(name.data(), name.size())] = value; });
  return d;
}

py::dict SpaceDict(const SpaceInfo& s) {
  py::dict d;
  VisitFields(s, [&d](std::string_view name, uint64_t value) {
    if (name == "free_list_bytes") return;  // not part of File.space() (_slabfs.pyi)
    d[py::str(name.data(), name.size())] = value;
  });
  return d;
}

}  // namespace

void BindContainer(py::module_& m) {
  m.def(
      "version", [] { return std::string(Version()); }, "The slabfs library version.");
  m.def(
      "set_log_level", [](const std::string& level) { Check(SetLogLevel(level)); },
      "Routes the engine's log lines to stderr at this spdlog level.");
  m.def(
      "_io_gil_state", [] { return g_io_gil_state.load(); },
      "Whether the last engine call held the GIL: -1 none yet, 0 no, 1 yes (for tests).");
  m.def(
      "_raise_for_test",
      [](const std::string& code, const std::string& context, const std::string& filename) {
        static const std::pair<const char*, Code> kCodes[] = {{"not found", Code::kNotFound},
                                                              {"already exists", Code::kAlreadyExists},
                                                              {"invalid argument", Code::kInvalidArgument},
                                                              {"corruption", Code::kCorruption},
                                                              {"I/O error", Code::kIOError},
                                                              {"no space", Code::kNoSpace},
                                                              {"not supported", Code::kNotSupported},
                                                              {"busy", Code::kBusy},
                                                              {"read-only", Code::kReadOnly},
                                                              {"not empty", Code::kNotEmpty},
                                                              {"out of range", Code::kOutOfRange},
                                                              {"permission denied", Code::kPermissionDenied},
                                                              {"not a group", Code::kNotAGroup},
                                                              {"not a dataset", Code::kNotADataset}};
        static const std::pair<const char*, Ctx> kContexts[] = {
            {"data", Ctx::kData}, {"lookup", Ctx::kLookup}, {"create", Ctx::kCreate}, {"file", Ctx::kFile}};
        for (const auto& [cn, c] : kCodes)
          for (const auto& [xn, x] : kContexts)
            if (code == cn && context == xn) Raise(Status(c, "test message"), x, filename);
        throw py::value_error("unknown code or context");
      },
      "Raises the exception a status code maps to in a context (for the tests of the table).");

  py::class_<OpenContainer, std::shared_ptr<OpenContainer>>(m, "Container",
                                                            "An open container file (low level; use slabfs.File).")
      .def_static("open", &Open, py::arg("path"), py::arg("read_only"), py::arg("create"), py::arg("cache_bytes"),
                  py::arg("cache_max_bytes"), py::arg("holder"))
      .def(
          "close",
          [](OpenContainer& c, bool commit) {
            Status s;
            {
              py::gil_scoped_release nogil;
              s = c.Close(commit);
            }
            Check(s);
          },
          py::arg("commit") = true)
      .def_property_readonly("closed", &OpenContainer::closed)
      .def_property_readonly("path", &OpenContainer::path)
      .def_property_readonly("read_only", &OpenContainer::read_only)
      .def_property_readonly("dirty",
                             [](const OpenContainer& c) {
                               auto r = c.Run([](Container& k) -> Result<bool> { return k.dirty(); });
                               return Value(std::move(r));
                             })
      .def("commit", [](const OpenContainer& c) { Check(WithoutGil(c, [](Container& k) { return k.Commit(); })); })
      .def("refresh", &Refresh)
      .def("resolve",
           [](const OpenContainer& c, const std::string& path) {
             return Value(WithoutGil(c, [&](Container& k) { return k.Resolve(path); }), Ctx::kLookup);
           })
      .def("lookup",
           [](const OpenContainer& c, ObjectId parent, const std::string& name) {
             return Value(WithoutGil(c, [&](Container& k) { return k.Lookup(parent, name); }), Ctx::kLookup);
           })
      .def("stat",
           [](const OpenContainer& c, ObjectId id) {
             ObjectInfo i = Value(WithoutGil(c, [&](Container& k) { return k.Stat(id); }), Ctx::kLookup);
             py::dict d;
             d["kind"] = KindName(i.kind);
             d["num_children"] = i.num_children;
             d["size_bytes"] = i.size_bytes;
             d["stored_bytes"] = i.stored_bytes;
             return d;
           })
      .def("list",
           [](const OpenContainer& c, ObjectId group) {
             auto entries = Value(WithoutGil(c, [&](Container& k) { return k.List(group); }), Ctx::kLookup);
             py::list out;
             for (const Entry& e : entries) out.append(py::make_tuple(e.name, e.id, KindName(e.kind)));
             return out;
           })
      .def("path_of",
           [](const OpenContainer& c, ObjectId id) {
             return Value(WithoutGil(c, [&](Container& k) { return k.PathOf(id); }), Ctx::kLookup);
           })
      .def("create_group",
           [](const OpenContainer& c, ObjectId parent, const std::string& name) {
             return Value(WithoutGil(c, [&](Container& k) { return k.CreateGroup(parent, name); }), Ctx::kCreate);
           })
      .def("make_groups",
           [](const OpenContainer& c, const std::string& path, bool parents) {
             return Value(WithoutGil(c, [&](Container& k) { return k.MakeGroups(path, parents); }), Ctx::kCreate);
           })
      .def(
          "create_dataset",
          [](const std::shared_ptr<OpenContainer>& c, ObjectId parent, const std::string& name,
             const std::string& dtype, const Index& shape, const std::vector<std::optional<uint64_t>>& maxshape,
             const Index& chunks, const py::bytes& fill, const std::string& filters, bool sparse,
             const std::string& index) {
            DatasetOptions o;
            o.dtype = Value(ParseDType(dtype));
            o.shape = shape;
            o.max_shape = MaxShapeDims(maxshape);
            o.chunks = chunks;
            o.fill = std::string(fill);
            o.filters = filters;
            o.sparse = sparse;
            o.index = Value(ParseIndexKind(index));
            Dataset ds =
                Value(WithoutGil(*c, [&](Container& k) { return k.CreateDataset(parent, name, o); }), Ctx::kCreate);
            return DatasetHandle{c, std::move(ds)};
          },
          py::arg("parent"), py::arg("name"), py::arg("dtype"), py::arg("shape"), py::arg("maxshape"),
          py::arg("chunks"), py::arg("fill"), py::arg("filters"), py::arg("sparse"), py::arg("index"))
      .def("open_dataset",
           [](const std::shared_ptr<OpenContainer>& c, ObjectId id) {
             Dataset ds = Value(WithoutGil(*c, [&](Container& k) { return k.OpenDataset(id); }), Ctx::kLookup);
             return DatasetHandle{c, std::move(ds)};
           })
      .def("remove",
           [](const OpenContainer& c, ObjectId parent, const std::string& name) {
             Check(WithoutGil(c, [&](Container& k) { return k.Remove(parent, name); }), Ctx::kLookup);
           })
      .def("rename",
           [](const OpenContainer& c, ObjectId from_parent, const std::string& from_name, ObjectId to_parent,
              const std::string& to_name, bool no_replace) {
             Check(
                 WithoutGil(
                     c, [&](Container& k) { return k.Rename(from_parent, from_name, to_parent, to_name, no_replace); }),
                 Ctx::kCreate);
           })
      .def("attr_names",
           [](const OpenContainer& c, ObjectId id) {
             return Value(WithoutGil(c, [&](Container& k) { return k.ListAttributes(id); }), Ctx::kLookup);
           })
      .def("get_attr",
           [](const OpenContainer& c, ObjectId id, const std::string& name) {
             Attribute a = Value(WithoutGil(c, [&](Container& k) { return k.GetAttribute(id, name); }), Ctx::kLookup);
             return AttributeTuple(a);
           })
      .def("set_attr",
           [](const OpenContainer& c, ObjectId id, const std::string& name, const std::string& kind,
              const std::string& dtype, const py::bytes& data) {
             Attribute a = AttributeFrom(kind, dtype, data);
             Check(WithoutGil(c, [&](Container& k) { return k.SetAttribute(id, name, a); }), Ctx::kCreate);
           })
      .def("del_attr",
           [](const OpenContainer& c, ObjectId id, const std::string& name) {
             Check(WithoutGil(c, [&](Container& k) { return k.DeleteAttribute(id, name); }), Ctx::kLookup);
           })
      .def("cache_stats",
           [](const OpenContainer& c) {
             auto r = c.Run([](Container& k) -> Result<CacheStats> { return k.cache_stats(); });
             return CacheStatsDict(Value(std::move(r)));
           })
      .def("space", [](const OpenContainer& c) {
        auto r = WithoutGil(c, [](Container& k) -> Result<SpaceInfo> { return k.space(); });
        return SpaceDict(Value(std::move(r)));
      });
}

}  // namespace slabfs::python
