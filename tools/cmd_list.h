// Subcommands that look at a container without changing it: ls and info.
// Both open the container read-only.
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
  bool long_format = false;  // kind, dtype, shape, chunks, size, stored bytes
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

void AddListCommands(CLI::App& app, CommandTable& table);

}  // namespace slabfs::tools

#endif  // SLABFS_TOOLS_CMD_LIST_H_
