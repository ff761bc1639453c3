#include "tools/cmd_tree.h"

#include <memory>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include "slabfs/container.h"
#include "tools/session.h"

namespace slabfs::tools {
namespace {

// Removes everything inside group `id`, depth first. `seen` guards against a corrupt container whose groups form a
// cycle.
Status EmptyGroup(Container& c, ObjectId id, std::string_view path, std::unordered_set<ObjectId>& seen) {
  if (!seen.insert(id).second) {
    return Status::Corruption(fmt::format("{}: the group tree has a cycle", path));
  }
  SLABFS_ASSIGN_OR_RETURN(std::vector<Entry> children, c.List(id));
  for (const Entry& e : children) {
    std::string child = path == "/" ? "/" + e.name : fmt::format("{}/{}", path, e.name);
    if (e.kind == ObjectKind::kGroup) SLABFS_RETURN_IF_ERROR(EmptyGroup(c, e.id, child, seen));
    SLABFS_RETURN_IF_ERROR(AddContext(c.Remove(id, e.name), child));
  }
  return Status::OK();
}

}  // namespace

Status RunCreate(const CreateOptions& o, std::ostream& /*out*/) {
  boost::system::error_code ec;
  if (boost::filesystem::exists(boost::filesystem::symlink_status(o.file, ec))) {
    return Status::AlreadyExists(fmt::format("{}: already exists (slab create never overwrites a file)", o.file));
  }
  SLABFS_ASSIGN_OR_RETURN(WriteSession session, WriteSession::Open(o.file, "create", true));
  return AddContext(session.Finish(), o.file);
}

Status RunMkgroup(const MkgroupOptions& o, std::ostream& /*out*/) {
  SLABFS_RETURN_IF_ERROR(CheckObjectPath(o.path));
  SLABFS_ASSIGN_OR_RETURN(WriteSession session, WriteSession::Open(o.file, "mkgroup"));
  auto id = session.container().MakeGroups(o.path, o.parents);
  if (!id) return AddContext(id.error(), o.path);
  return AddContext(session.Finish(), o.file);
}

Status RunMkdset(const MkdsetOptions& o, std::ostream& /*out*/) {
  SLABFS_RETURN_IF_ERROR(CheckObjectPath(o.path));
  if (IsRootPath(o.path)) return Status::InvalidArgument("/: the root is a group, not a dataset");
  auto dtype = ParseDType(o.dtype);
  if (!dtype) return AddContext(dtype.error(), fmt::format("--dtype '{}'", o.dtype));
  SLABFS_ASSIGN_OR_RETURN(Dims shape, ParseDimsOption("--shape", o.shape, false, true));
  SLABFS_ASSIGN_OR_RETURN(DatasetOptions options, MakeDatasetOptions(*dtype, shape,
                                                                     {.chunks = o.chunks,
                                                                      .fill = o.fill,
                                                                      .max_shape = o.max_shape,
                                                                      .index = o.index,
                                                                      .filters = o.filters,
                                                                      .sparse = o.sparse}));

  SLABFS_ASSIGN_OR_RETURN(WriteSession session, WriteSession::Open(o.file, "mkdset"));
  Container& c = session.container();
  if (o.parents) {
    std::string parent = ParentPath(o.path);
    auto id = c.MakeGroups(parent, true);
    if (!id) return AddContext(id.error(), parent);
  }
  auto ds = c.CreateDataset(o.path, options);
  if (!ds) return AddContext(ds.error(), o.path);
  return AddContext(session.Finish(), o.file);
}

Status RunResize(const ResizeOptions& o, std::ostream& /*out*/) {
  SLABFS_RETURN_IF_ERROR(CheckObjectPath(o.path));
  SLABFS_ASSIGN_OR_RETURN(Dims shape, ParseDimsOption("SHAPE", o.shape, false, true));
  SLABFS_ASSIGN_OR_RETURN(WriteSession session, WriteSession::Open(o.file, "resize"));
  auto ds = session.container().OpenDataset(o.path);
  if (!ds) return AddContext(ds.error(), o.path);
  SLABFS_RETURN_IF_ERROR(AddContext(ds->Resize(shape), o.path));
  return AddContext(session.Finish(), o.file);
}

Status RunRm(const RmOptions& o, std::ostream& /*out*/) {
  SLABFS_RETURN_IF_ERROR(CheckObjectPath(o.path));
  if (IsRootPath(o.path)) return Status::InvalidArgument("/: the root group cannot be removed");
  SLABFS_ASSIGN_OR_RETURN(WriteSession session, WriteSession::Open(o.file, "rm"));
  Container& c = session.container();
  if (o.recursive) {
    auto id = c.Resolve(o.path);
    if (!id) return AddContext(id.error(), o.path);
    auto info = c.Stat(*id);
    if (!info) return AddContext(info.error(), o.path);
    if (info->kind == ObjectKind::kGroup) {
      std::unordered_set<ObjectId> seen;
      SLABFS_RETURN_IF_ERROR(EmptyGroup(c, *id, o.path, seen));
    }
  }
  Status s = c.Remove(o.path);
  if (s.code() == Code::kNotEmpty && !o.recursive) {
    return Status::NotEmpty(
        fmt::format("{}: the group is not empty (use rm -r to remove it and its contents)", o.path));
  }
  SLABFS_RETURN_IF_ERROR(AddContext(std::move(s), o.path));
  return AddContext(session.Finish(), o.file);
}

Status RunMv(const MvOptions& o, std::ostream& /*out*/) {
  SLABFS_RETURN_IF_ERROR(CheckObjectPath(o.from));
  SLABFS_RETURN_IF_ERROR(CheckObjectPath(o.to));
  if (IsRootPath(o.from) || IsRootPath(o.to)) {
    return Status::InvalidArgument("/: the root group cannot be moved or replaced");
  }
  SLABFS_ASSIGN_OR_RETURN(WriteSession session, WriteSession::Open(o.file, "mv"));
  SLABFS_RETURN_IF_ERROR(AddContext(session.container().Rename(o.from, o.to), fmt::format("{} -> {}", o.from, o.to)));
  return AddContext(session.Finish(), o.file);
}

void AddTreeCommands(CLI::App& app, CommandTable& table) {
  {
    auto o = std::make_shared<CreateOptions>();
    CLI::App* sub = app.add_subcommand("create", "Create an empty container file");
    sub->add_option("FILE", o->file, "container file to create; an existing file is an error")->required();
    table.Add(sub, [o](std::ostream& out) { return RunCreate(*o, out); });
  }
  {
    auto o = std::make_shared<MkgroupOptions>();
    CLI::App* sub = app.add_subcommand("mkgroup", "Create a group");
    sub->add_flag("-p,--parents", o->parents, "create missing parent groups; an existing group is not an error");
    sub->add_option("FILE", o->file, "container file")->required();
    sub->add_option("PATH", o->path, "absolute path of the new group, like /a/b")->required();
    table.Add(sub, [o](std::ostream& out) { return RunMkgroup(*o, out); });
  }
  {
    auto o = std::make_shared<MkdsetOptions>();
    CLI::App* sub = app.add_subcommand("mkdset", "Create a dataset (every element reads as the fill value)");
    sub->add_option("FILE", o->file, "container file")->required();
    sub->add_option("PATH", o->path, "absolute path of the new dataset, like /a/ds")->required();
    sub->add_option("--dtype", o->dtype, "element type: i1 i2 i4 i8 u1 u2 u4 u8 f4 f8")->required();
    sub->add_option("--shape", o->shape, "dimensions, comma-separated, like 2000,2000")->required();
    sub->add_option("--chunks", o->chunks, "chunk shape, same rank as --shape (default: chosen by slabfs)");
    sub->add_option("--fill", o->fill,
                    "fill value for elements never written (default 0); spell values "
                    "such as -inf as --fill=-inf");
    sub->add_option("--maxshape", o->max_shape,
                    "how far each dimension may grow: a number >= the shape, or unlimited, like "
                    "unlimited,512,512 (default: the shape, fixed)");
    sub->add_option("--index", o->index, "chunk index: auto (default), single, compact, fixed, extensible or btree");
    AddFilterOptions(sub, &o->filters);
    sub->add_flag("--sparse", o->sparse,
                  "sparse: only elements written (and not erased) are defined and take space; "
                  "the rest read as the fill value (see slab defined, slab erase)");
    sub->add_flag("-p,--parents", o->parents, "create missing parent groups");
    table.Add(sub, [o](std::ostream& out) { return RunMkdset(*o, out); });
  }
  {
    auto o = std::make_shared<ResizeOptions>();
    CLI::App* sub = app.add_subcommand(
        "resize", "Grow or shrink a dataset within its max shape (shrinking frees the chunks left outside)");
    sub->add_option("FILE", o->file, "container file")->required();
    sub->add_option("PATH", o->path, "absolute path of the dataset")->required();
    sub->add_option("SHAPE", o->shape, "the new shape, like 1000,512,512")->required();
    table.Add(sub, [o](std::ostream& out) { return RunResize(*o, out); });
  }
  {
    auto o = std::make_shared<RmOptions>();
    CLI::App* sub = app.add_subcommand("rm", "Remove a dataset or an empty group");
    sub->add_flag("-r,--recursive", o->recursive, "remove a group and everything in it");
    sub->add_option("FILE", o->file, "container file")->required();
    sub->add_option("PATH", o->path, "absolute path of the object to remove")->required();
    table.Add(sub, [o](std::ostream& out) { return RunRm(*o, out); });
  }
  {
    auto o = std::make_shared<MvOptions>();
    CLI::App* sub = app.add_subcommand("mv", "Rename or move a group or dataset");
    sub->add_option("FILE", o->file, "container file")->required();
    sub->add_option("FROM", o->from, "absolute path of the object")->required();
    sub->add_option("TO", o->to, "its new absolute path")->required();
    table.Add(sub, [o](std::ostream& out) { return RunMv(*o, out); });
  }
}

}  // namespace slabfs::tools
