// Subcommands about which elements of a dataset are defined: erase and
// defined. SLICE arguments use numpy syntax (tools/slice.h); a malformed
// SLICE is refused before the container is opened, and one that does not
// fit the dataset's shape before anything changes.
#ifndef SLABFS_TOOLS_CMD_SPARSE_H_
#define SLABFS_TOOLS_CMD_SPARSE_H_

#include <optional>
#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "slabfs/status.h"
#include "tools/commands.h"

namespace slabfs::tools {

struct EraseOptions {
  std::string file;
  std::string path;
  std::string slice;  // "10:20,::2,5"
};
// Makes the selected elements undefined (they read as the fill value) and
// commits. A bad path or slice and an empty selection are found in a
// read-only look before the writer lock is taken, and leave the file's
// bytes as they were. Prints nothing.
Status RunErase(const EraseOptions& o, std::ostream& out);

struct DefinedOptions {
  std::string file;
  std::string path;
  std::optional<std::string> slice;  // absent: the whole dataset
  bool json = false;
};
// Prints the defined elements inside the selection as disjoint boxes in C
// order of their first element (a region across chunks is one box), one per line as a half-open numpy slice
// ("[10:20, 0:5]"), then "N elements defined in M boxes". With json, one
// object {"boxes":[{"start":[...],"count":[...]},...],"elements":N}.
//
// A selection with steps ("::2") gives the defined elements it selects:
// each box cut down to the selected indices, which is a box with the same
// steps; the lines show them ("[10:19:2, 0:5]") and each JSON box then also
// has "step":[...] (1 where a box spans one index).
Status RunDefined(const DefinedOptions& o, std::ostream& out);

void AddSparseCommands(CLI::App& app, CommandTable& table);

}  // namespace slabfs::tools

#endif  // SLABFS_TOOLS_CMD_SPARSE_H_
