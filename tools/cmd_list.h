// Subcommands that look at a container without changing it: ls, info and
// chunks. All open the file read-only as a store (OpenStoreForReading), so
// they read an HDF5 or netCDF-4 file the same way; for such a file, ls and
// info add what the store skips ("skipped: PATH: REASON", describe.h).
#ifndef SLABFS_TOOLS_CMD_LIST_H_
#define SLABFS_TOOLS_CMD_LIST_H_

#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "slabfs/status.h"
#include "tools/commands.h"

namespace slabfs::tools {

struct LsOptions {
  std::string file;
  std::string path = "/";
  bool long_format = false;  // kind, dtype, shape, chunks, size, stored bytes, ratio
  bool recursive = false;
};
// Lists a group's children (groups end in '/'), or names a dataset. With
// recursive, the whole subtree in depth-first order, as paths relative to
// the listed group.
Status RunLs(const LsOptions& o, std::ostream& out);

struct InfoOptions {
  std::string file;
  std::string path;
  bool json = false;
};
Status RunInfo(const InfoOptions& o, std::ostream& out);

struct ChunksOptions {
  std::string file;
  std::string path;
  bool json = false;
};
// Lists every stored chunk of a dataset sorted by grid coordinates (C
// order): coordinates, file offset, stored bytes and filter mask (bit i set:
// filter i of the pipeline was skipped for that chunk). Text is a table
// under a header line; JSON is one array of
// {"coords":[...],"offset":N,"bytes":N,"filter_mask":N}, which tests that
// damage a chunk on purpose rely on.
Status RunChunks(const ChunksOptions& o, std::ostream& out);

void AddListCommands(CLI::App& app, CommandTable& table);

}  // namespace slabfs::tools

#endif  // SLABFS_TOOLS_CMD_LIST_H_
