#include "tools/cmd_list.h"

#include <algorithm>
#include <array>
#include <memory>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "slabfs/container.h"
#include "slabfs/store.h"
#include "tools/describe.h"
#include "tools/session.h"

namespace slabfs::tools {
namespace {

// One line of `slab ls -l`: kind, dtype, shape, chunks, size, stored, ratio,
// name.
using Row = std::array<std::string, 8>;
constexpr size_t kNameColumn = 7;

Result<Row> MakeRow(const Store& c, ObjectId id, ObjectKind kind, std::string name, std::string_view path) {
  if (kind == ObjectKind::kGroup) return Row{"group", "-", "-", "-", "-", "-", "-", name + "/"};
  auto ds = c.OpenDataset(id);
  if (!ds) return Err(AddContext(ds.error(), path));
  const DatasetInfo& i = (*ds)->info().dataset;
  return Row{"dataset",
             std::string(DTypeName(i.dtype)),
             FormatDims(i.shape),
             FormatDims(i.chunks),
             fmt::format("{}", i.size_bytes),
             fmt::format("{}", i.stored_bytes),
             FormatRatio(i.size_bytes, i.stored_bytes),
             std::move(name)};
}

class Lister {
 public:
  Lister(const Store& c, bool long_format, bool recursive) : c_(c), long_format_(long_format), recursive_(recursive) {}

  // Adds the children of group `id` (at `path`), names prefixed by `prefix`.
  Status AddGroup(ObjectId id, std::string_view path, std::string_view prefix) {
    if (!seen_.insert(id).second) {
      return Status::Corruption(fmt::format("{}: the group tree has a cycle", path));
    }
    auto children = c_.List(id);
    if (!children) return AddContext(children.error(), path);
    for (const Entry& e : *children) {
      std::string child_path = path == "/" ? "/" + e.name : fmt::format("{}/{}", path, e.name);
      std::string name = fmt::format("{}{}", prefix, e.name);
      SLABFS_RETURN_IF_ERROR(Add(e.id, e.kind, name, child_path));
      if (recursive_ && e.kind == ObjectKind::kGroup) {
        SLABFS_RETURN_IF_ERROR(AddGroup(e.id, child_path, name + "/"));
      }
    }
    return Status::OK();
  }

  Status Add(ObjectId id, ObjectKind kind, std::string name, std::string_view path) {
    if (!long_format_) {
      rows_.push_back(Row{});
      rows_.back()[kNameColumn] = kind == ObjectKind::kGroup ? name + "/" : std::move(name);
      return Status::OK();
    }
    SLABFS_ASSIGN_OR_RETURN(Row row, MakeRow(c_, id, kind, std::move(name), path));
    rows_.push_back(std::move(row));
    return Status::OK();
  }

  void Print(std::ostream& out) const {
    if (!long_format_) {
      for (const Row& r : rows_) out << r[kNameColumn] << '\n';
      return;
    }
    if (rows_.empty()) return;
    // A header names the columns, as ps(1) does; scripts skip the first line.
    static const Row kHeader{"KIND", "DTYPE", "SHAPE", "CHUNKS", "SIZE", "STORED", "RATIO", "NAME"};
    std::array<size_t, kNameColumn> width{};
    for (const Row& r : rows_) {
      for (size_t i = 0; i < kNameColumn; ++i) width[i] = std::max(width[i], r[i].size());
    }
    for (size_t i = 0; i < kNameColumn; ++i) width[i] = std::max(width[i], kHeader[i].size());
    std::vector<const Row*> lines{&kHeader};
    for (const Row& r : rows_) lines.push_back(&r);
    for (const Row* row : lines) {
      const Row& r = *row;
      // Text columns align left, byte counts and ratios right.
      out << fmt::format("{:<{}}  {:<{}}  {:<{}}  {:<{}}  {:>{}}  {:>{}}  {:>{}}  {}\n", r[0], width[0], r[1], width[1],
                         r[2], width[2], r[3], width[3], r[4], width[4], r[5], width[5], r[6], width[6], r[7]);
    }
  }

 private:
  const Store& c_;
  bool long_format_;
  bool recursive_;
  std::vector<Row> rows_;
  std::unordered_set<ObjectId> seen_;
};

// Whether a skipped object (or an attribute of one) belongs in the listing
// of `path`: a child of it, or with `recursive` anything under it.
bool ListsSkipped(const SkippedObject& s, std::string_view path, ObjectKind kind, bool recursive) {
  std::string_view owner = SkippedOwner(s);
  if (kind == ObjectKind::kDataset) return owner == path;
  if (owner == "/") return false;
  if (recursive)
    return path == "/" || (owner.starts_with(path) && owner.size() > path.size() && owner[path.size()] == '/');
  return ParentPath(owner) == path;
}

}  // namespace

Status RunLs(const LsOptions& o, std::ostream& out) {
  SLABFS_RETURN_IF_ERROR(CheckObjectPath(o.path));
  SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<Store> c, OpenStoreForReading(o.file));
  auto id = c->Resolve(o.path);
  if (!id) return AddContext(id.error(), o.path);
  auto info = c->Stat(*id);
  if (!info) return AddContext(info.error(), o.path);
  auto canonical = c->PathOf(*id);
  if (!canonical) return AddContext(canonical.error(), o.path);

  Lister lister(*c, o.long_format, o.recursive);
  if (info->kind == ObjectKind::kDataset) {
    SLABFS_RETURN_IF_ERROR(lister.Add(*id, info->kind, o.path, o.path));
  } else {
    SLABFS_RETURN_IF_ERROR(lister.AddGroup(*id, *canonical, ""));
  }
  lister.Print(out);
  // What a foreign store leaves out there (a container leaves out nothing).
  for (const SkippedObject& s : c->Skipped()) {
    if (ListsSkipped(s, *canonical, info->kind, o.recursive)) out << SkippedLine(s) << '\n';
  }
  return Status::OK();
}

Status RunInfo(const InfoOptions& o, std::ostream& out) {
  SLABFS_RETURN_IF_ERROR(CheckObjectPath(o.path));
  SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<Store> c, OpenStoreForReading(o.file));
  SLABFS_ASSIGN_OR_RETURN(Description d, Describe(*c, o.path));
  if (o.json) {
    // Names and strings are bytes, not necessarily UTF-8: replace what JSON
    // cannot hold rather than fail.
    out << DescriptionToJson(d).dump(2, ' ', false, Json::error_handler_t::replace) << '\n';
  } else {
    out << DescriptionToText(d);
  }
  return Status::OK();
}

Status RunChunks(const ChunksOptions& o, std::ostream& out) {
  SLABFS_RETURN_IF_ERROR(CheckObjectPath(o.path));
  SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<Store> c, OpenStoreForReading(o.file));
  auto ds = c->OpenDataset(o.path);
  if (!ds) return AddContext(ds.error(), o.path);
  // Sorted by grid coordinates (Store::StoredChunks).
  auto chunks = (*ds)->StoredChunks();
  if (!chunks) return AddContext(chunks.error(), o.path);
  if (o.json) {
    Json a = Json::array();
    for (const StoredChunk& ch : *chunks) {
      Json j;
      j["coords"] = ch.coords;
      j["offset"] = ch.addr;
      j["bytes"] = ch.bytes;
      j["filter_mask"] = ch.filter_mask;
      a.push_back(std::move(j));
    }
    out << a.dump() << '\n';
    return Status::OK();
  }
  std::vector<std::array<std::string, 4>> rows;
  rows.push_back({"coords", "offset", "bytes", "filter_mask"});
  for (const StoredChunk& ch : *chunks) {
    rows.push_back({FormatDims(ch.coords), fmt::format("{}", ch.addr), fmt::format("{}", ch.bytes),
                    fmt::format("{}", ch.filter_mask)});
  }
  std::array<size_t, 4> width{};
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  for (const auto& r : rows) {
    out << fmt::format("{:<{}}  {:>{}}  {:>{}}  {:>{}}\n", r[0], width[0], r[1], width[1], r[2], width[2], r[3],
                       width[3]);
  }
  return Status::OK();
}

void AddListCommands(CLI::App& app, CommandTable& table) {
  {
    auto o = std::make_shared<LsOptions>();
    CLI::App* sub = app.add_subcommand("ls", "List a group's children, or name a dataset");
    sub->add_flag("-l,--long", o->long_format,
                  "long format under a header line: kind, dtype, shape, chunks, size, stored "
                  "bytes and the compression ratio (size / stored; - when nothing is stored)");
    sub->add_flag("-r,--recursive", o->recursive, "list the whole subtree");
    sub->add_option("FILE", o->file, "container, HDF5 or netCDF-4 file")->required();
    sub->add_option("PATH", o->path, "absolute path of a group or dataset")->capture_default_str();
    table.Add(sub, [o](std::ostream& out) { return RunLs(*o, out); });
  }
  {
    auto o = std::make_shared<InfoOptions>();
    CLI::App* sub = app.add_subcommand("info", "Describe a group or dataset and its attributes");
    sub->add_flag("--json", o->json, "print one JSON object");
    sub->add_option("FILE", o->file, "container, HDF5 or netCDF-4 file")->required();
    sub->add_option("PATH", o->path, "absolute path of a group or dataset")->required();
    table.Add(sub, [o](std::ostream& out) { return RunInfo(*o, out); });
  }
  {
    auto o = std::make_shared<ChunksOptions>();
    CLI::App* sub = app.add_subcommand("chunks",
                                       "List the stored chunks of a dataset: grid coordinates, file offset, stored "
                                       "bytes and filter mask, sorted by coordinates");
    sub->add_flag("--json", o->json,
                  "print a JSON array of {\"coords\":[...],\"offset\":N,\"bytes\":N,"
                  "\"filter_mask\":N}");
    sub->add_option("FILE", o->file, "container, HDF5 or netCDF-4 file")->required();
    sub->add_option("PATH", o->path, "absolute path of a dataset")->required();
    table.Add(sub, [o](std::ostream& out) { return RunChunks(*o, out); });
  }
}

}  // namespace slabfs::tools
