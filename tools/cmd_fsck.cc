#include "tools/cmd_fsck.h"

#include <sys/stat.h>
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "slabfs/container.h"
#include "slabfs/fsck.h"
#include "slabfs/store.h"
#include "tools/convert/progress.h"
#include "tools/describe.h"
#include "tools/session.h"

namespace slabfs::tools {
namespace {

nlohmann::json ToJson(const std::string& file, const FsckReport& r) {
  const FsckStats& s = r.stats;
  nlohmann::json findings = nlohmann::json::array();
  for (const FsckFinding& f : r.findings) {
    findings.push_back({{"kind", FindingKindName(f.kind)},
                        {"where", f.where},
                        {"what", f.what},
                        {"addr", f.addr},
                        {"bytes", f.bytes}});
  }
  return {{"file", file},
          {"status", r.damaged() ? "damaged"
                     : r.leaks() ? "leaks"
                                 : "clean"},
          {"generation", s.generation},
          {"file_bytes", s.file_bytes},
          {"file_end", s.file_end},
          {"groups", s.groups},
          {"datasets", s.datasets},
          {"attributes", s.attributes},
          {"object_blocks", s.object_blocks},
          {"object_bytes", s.object_bytes},
          {"index_blocks", s.index_blocks},
          {"index_bytes", s.index_bytes},
          {"chunks", s.chunks},
          {"chunk_bytes", s.chunk_bytes},
          {"chunks_verified", s.chunks_verified},
          {"free_extents", s.free_extents},
          {"free_list_blocks", s.free_list_blocks},
          {"free_bytes", s.free_bytes},
          {"held_bytes", s.held_bytes},
          {"leaked_bytes", s.leaked_bytes},
          {"findings", findings}};
}

void PrintText(const std::string& file, const FsckReport& r, bool no_data, std::ostream& out) {
  const FsckStats& s = r.stats;
  for (const FsckFinding& f : r.findings) {
    out << fmt::format("{}: {}: {}\n", FindingKindName(f.kind), f.where, f.what);
  }
  out << fmt::format("{}: generation {}, {} bytes (file end {})\n", file, s.generation, s.file_bytes, s.file_end);
  out << fmt::format("  {}, {}, {} in {} ({})\n", Counted(s.groups, "group"), Counted(s.datasets, "dataset"),
                     Counted(s.attributes, "attribute"), Counted(s.object_blocks, "object block"),
                     Counted(s.object_bytes, "byte"));
  out << fmt::format("  {} ({}){}, {} ({})\n", Counted(s.chunks, "chunk"), Counted(s.chunk_bytes, "byte"),
                     no_data ? ", not read (--no-data)" : fmt::format(", {} read and verified", s.chunks_verified),
                     Counted(s.index_blocks, "index block"), Counted(s.index_bytes, "byte"));
  out << fmt::format("  free: {}, {} ({} held for readers); leaked: {}\n", Counted(s.free_extents, "extent"),
                     Counted(s.free_bytes, "byte"), Counted(s.held_bytes, "byte"), Counted(s.leaked_bytes, "byte"));
  out << (r.damaged() ? "DAMAGED\n" : r.leaks() ? "leaked space (the data is intact)\n" : "clean\n");
}

// One check, with a progress bar unless quiet.
Result<FsckReport> Check(const FsckCommandOptions& o) {
  Progress progress("checking", o.quiet || o.json);
  uint64_t reported = 0;
  Status interrupted;
  FsckOptions fo;
  fo.verify_data = !o.no_data;
  fo.progress = [&](uint64_t done, uint64_t total) {
    progress.SetTotal(total, 0);
    Status s = progress.Advance(done - reported, 1);
    reported = done;
    if (!s.ok()) interrupted = s;
    return s.ok();
  };
  auto report = CheckContainer(o.file, fo);
  progress.Done();
  SLABFS_RETURN_IF_ERROR_R(interrupted);
  return report;
}

// Rebuilds the free list from what the committed tree references and
// commits it (OpenOptions::rebuild_free_list): a damaged free list is
// replaced and leaked space is free again. Nothing else changes.
Status RepairFreeList(const std::string& file) {
  OpenOptions options;
  options.rebuild_free_list = true;
  options.holder = "slab fsck --repair";
  SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<Container> c, Container::Open(file, options));
  return c->Close();
}

// The check of a foreign store (an HDF5 or netCDF-4 file): every object
// and attribute the store shows is read, and every stored chunk of every
// dataset is read and decoded through the store, whose checks (extents
// inside the file, streams that inflate to exactly the chunk, Fletcher-32)
// name the damaged chunk. libhdf5's own structures are libhdf5's to check
// (h5check); what the store cannot read at all fails the open.
struct StoreCheck {
  uint64_t file_bytes = 0;
  uint64_t groups = 0;  // not counting the root
  uint64_t datasets = 0;
  uint64_t attributes = 0;
  uint64_t chunks = 0;
  uint64_t chunk_bytes = 0;
  uint64_t chunks_verified = 0;
  std::vector<std::pair<std::string, std::string>> damage;  // where, what
  std::vector<SkippedObject> skipped;
};

std::string StoreChildPath(std::string_view parent, std::string_view name) {
  return parent == "/" ? fmt::format("/{}", name) : fmt::format("{}/{}", parent, name);
}

// Reads every stored chunk of `ds` (elements only: a chunk's box, clipped
// to the shape; a contiguous dataset a block at a time).
void CheckStoreDataset(const StoreDataset& ds, bool read_data, StoreCheck& r) {
  auto chunks = ds.StoredChunks();
  if (!chunks) {
    r.damage.emplace_back(ds.path(), chunks.error().message());
    return;
  }
  const DatasetInfo& info = ds.info().dataset;
  const size_t item = ItemSize(info.dtype);
  r.chunks += chunks->size();
  for (const StoredChunk& ch : *chunks) r.chunk_bytes += ch.bytes;
  if (!read_data) return;
  std::vector<char> buf;
  if (ds.info().layout == StoreLayout::kContiguous) {
    if (chunks->empty()) return;
    const uint64_t block = std::max<uint64_t>(1, kTransferBlockBytes / item);
    buf.resize(static_cast<size_t>(std::min(block, info.num_elements)) * item);
    for (uint64_t first = 0; first < info.num_elements; first += block) {
      Status s = ds.ReadElements(first, std::min(block, info.num_elements - first), buf.data());
      if (!s.ok()) {
        r.damage.emplace_back(ds.path(), s.message());
        return;
      }
    }
    r.chunks_verified += chunks->size();
    return;
  }
  for (const StoredChunk& ch : *chunks) {
    Dims start(info.shape.size()), count(info.shape.size());
    bool inside = true;
    for (size_t d = 0; d < info.shape.size(); ++d) {
      start[d] = ch.coords[d] * info.chunks[d];
      if (start[d] >= info.shape[d]) inside = false;
      count[d] = inside ? std::min(info.chunks[d], info.shape[d] - start[d]) : 0;
    }
    if (!inside) {  // a chunk a shrunk dataset left outside its shape
      ++r.chunks_verified;
      continue;
    }
    Slab box = Slab::Box(start, count);
    buf.resize(static_cast<size_t>(box.num_elements()) * item);
    Status s = ds.Read(box, buf.data());
    if (!s.ok()) {
      // The store's message names the file, dataset and chunk.
      r.damage.emplace_back(ds.path(), s.message());
      continue;
    }
    ++r.chunks_verified;
  }
}

void CheckStoreGroup(const Store& store, ObjectId id, const std::string& path, bool read_data, StoreCheck& r) {
  auto names = store.ListAttributes(id);
  if (!names) {
    r.damage.emplace_back(path, names.error().message());
  } else {
    for (const std::string& n : *names) {
      auto a = store.GetAttribute(id, n);
      if (!a) r.damage.emplace_back(fmt::format("{} attribute '{}'", path, n), a.error().message());
      ++r.attributes;
    }
  }
  auto info = store.Stat(id);
  if (!info) {
    r.damage.emplace_back(path, info.error().message());
    return;
  }
  if (info->kind == ObjectKind::kDataset) {
    ++r.datasets;
    auto ds = store.OpenDataset(id);
    if (!ds) {
      r.damage.emplace_back(path, ds.error().message());
      return;
    }
    CheckStoreDataset(**ds, read_data, r);
    return;
  }
  if (id != kRootId) ++r.groups;
  auto children = store.List(id);
  if (!children) {
    r.damage.emplace_back(path, children.error().message());
    return;
  }
  for (const Entry& e : *children) CheckStoreGroup(store, e.id, StoreChildPath(path, e.name), read_data, r);
}

Status FsckStore(FsckCommandOptions& o, std::ostream& out) {
  if (o.repair) {
    SLABFS_RETURN_IF_ERROR(ForeignFileStatus(o.file, /*changes=*/true));
  }
  SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStoreForReading(o.file));
  StoreCheck r;
  struct stat st {};
  if (::stat(o.file.c_str(), &st) == 0) r.file_bytes = static_cast<uint64_t>(st.st_size);
  r.skipped = store->Skipped();
  CheckStoreGroup(*store, kRootId, "/", !o.no_data, r);
  const bool damaged = !r.damage.empty();
  if (o.json) {
    nlohmann::json damage = nlohmann::json::array();
    for (const auto& [where, what] : r.damage) damage.push_back({{"kind", "damage"}, {"where", where}, {"what", what}});
    nlohmann::json skipped = nlohmann::json::array();
    for (const SkippedObject& s : r.skipped) skipped.push_back({{"path", s.path}, {"reason", s.reason}});
    nlohmann::json j = {{"file", o.file},
                        {"format", std::string(store->format())},
                        {"status", damaged ? "damaged" : "clean"},
                        {"file_bytes", r.file_bytes},
                        {"groups", r.groups},
                        {"datasets", r.datasets},
                        {"attributes", r.attributes},
                        {"chunks", r.chunks},
                        {"chunk_bytes", r.chunk_bytes},
                        {"chunks_verified", r.chunks_verified},
                        {"findings", damage},
                        {"skipped", skipped}};
    out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else if (!o.quiet || damaged) {
    for (const auto& [where, what] : r.damage) out << fmt::format("damage: {}: {}\n", where, what);
    for (const SkippedObject& s : r.skipped) out << SkippedLine(s) << "\n";
    out << fmt::format("{}: an HDF5 file (read through the HDF5 store), {}\n", o.file, Counted(r.file_bytes, "byte"));
    out << fmt::format("  {}, {}, {}; {} skipped\n", Counted(r.groups, "group"), Counted(r.datasets, "dataset"),
                       Counted(r.attributes, "attribute"), Counted(r.skipped.size(), "object"));
    out << fmt::format("  {} ({}){}\n", Counted(r.chunks, "chunk"), Counted(r.chunk_bytes, "byte"),
                       o.no_data ? ", not read (--no-data)" : fmt::format(", {} read and verified", r.chunks_verified));
    out << (damaged ? "DAMAGED\n" : "clean\n");
  }
  o.exit_status = damaged ? kExitFsckDamaged : 0;
  return Status::OK();
}

}  // namespace

Status RunFsck(FsckCommandOptions& o, std::ostream& out) {
  if (IsForeignStore(o.file)) return FsckStore(o, out);
  auto report = Check(o);
  if (!report) return report.error();
  if (o.repair && !report->clean()) {
    // Only the free list is derived data; other damage stays in the report
    // (slab export still reads what is intact).
    Status s = RepairFreeList(o.file);
    if (!s.ok()) return s.WithContext("repair");
    if (!o.quiet && !o.json) {
      out << fmt::format("{}: free list rebuilt from what the tree references; checking again\n", o.file);
    }
    report = Check(o);
    if (!report) return report.error();
  }
  if (o.json) {
    out << ToJson(o.file, *report).dump(2) << "\n";
  } else if (!o.quiet || !report->clean()) {
    PrintText(o.file, *report, o.no_data, out);
  }
  o.exit_status = report->damaged() ? kExitFsckDamaged : report->leaks() ? kExitFsckLeaks : 0;
  return Status::OK();
}

void AddFsckCommand(CLI::App& app, CommandTable& table) {
  auto o = std::make_shared<FsckCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "fsck", "Check every structure, checksum and chunk of a container; changes it only with --repair");
  sub->add_option("FILE", o->file, "container, HDF5 or netCDF-4 file")->required();
  sub->add_flag("--json", o->json, "print one JSON object");
  sub->add_flag("--no-data", o->no_data, "check the structures and the chunks' extents, but do not read the chunks");
  sub->add_flag("-q,--quiet", o->quiet, "print nothing when the container is clean; no progress bar");
  sub->add_flag("--repair", o->repair,
                "when the check finds damage or leaks, rebuild the free list from what the tree "
                "references and commit it (a damaged free list is replaced, leaked space freed), "
                "then check again; other damage is only reported");
  sub->footer(
      "An HDF5 or netCDF-4 file is checked through the HDF5 store: every object and attribute it shows is "
      "read, and every stored chunk read and decoded (what the store skips is listed).\n"
      "Exit status: 0 clean, 3 leaked space only (the data is intact; slab repack or "
      "slab fsck --repair gives it back), 4 damaged, 1 the file could not be checked (missing, "
      "unreadable, not a slabfs container or HDF5 file).\n");
  table.Add(
      sub, [o](std::ostream& out) { return RunFsck(*o, out); }, &o->exit_status);
}

}  // namespace slabfs::tools
