#include "tools/cmd_fsck.h"

#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "slabfs/container.h"
#include "slabfs/fsck.h"
#include "tools/convert/progress.h"

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

}  // namespace

Status RunFsck(FsckCommandOptions& o, std::ostream& out) {
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
  sub->add_option("FILE", o->file, "container file")->required();
  sub->add_flag("--json", o->json, "print one JSON object");
  sub->add_flag("--no-data", o->no_data, "check the structures and the chunks' extents, but do not read the chunks");
  sub->add_flag("-q,--quiet", o->quiet, "print nothing when the container is clean; no progress bar");
  sub->add_flag("--repair", o->repair,
                "when the check finds damage or leaks, rebuild the free list from what the tree "
                "references and commit it (a damaged free list is replaced, leaked space freed), "
                "then check again; other damage is only reported");
  sub->footer(
      "Exit status: 0 clean, 3 leaked space only (the data is intact; slab repack or "
      "slab fsck --repair gives it back), 4 damaged, 1 the file could not be checked (missing, "
      "unreadable, not a slabfs container).\n");
  table.Add(
      sub, [o](std::ostream& out) { return RunFsck(*o, out); }, &o->exit_status);
}

}  // namespace slabfs::tools
