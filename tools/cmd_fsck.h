// slab fsck FILE [--json] [--no-data] [--quiet] [--repair]: checks a
// container (see include/slabfs/fsck.h) and prints what it found; with
// --repair, a container found damaged or leaking gets a free list rebuilt
// from what its tree references, and is checked again.
//
// Exit status: 0 clean (warnings allowed), 3 leaked space only (the data is
// intact; slab repack gives the space back), 4 damaged, 1 the file could not
// be checked at all (missing, unreadable, not a slabfs container), 2 usage.
#ifndef SLABFS_TOOLS_CMD_FSCK_H_
#define SLABFS_TOOLS_CMD_FSCK_H_

#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "slabfs/status.h"
#include "tools/commands.h"

namespace slabfs::tools {

inline constexpr int kExitFsckLeaks = 3;
inline constexpr int kExitFsckDamaged = 4;

struct FsckCommandOptions {
  std::string file;
  bool json = false;
  bool no_data = false;
  bool quiet = false;
  bool repair = false;  // rebuild the free list (OpenOptions::rebuild_free_list)
  int exit_status = 0;  // set by RunFsck
};
Status RunFsck(FsckCommandOptions& o, std::ostream& out);

void AddFsckCommand(CLI::App& app, CommandTable& table);

}  // namespace slabfs::tools

#endif  // SLABFS_TOOLS_CMD_FSCK_H_
