// Subcommands that shape the tree of a container: create, mkgroup, mkdset,
// rm and mv. Each opens the container for writing and commits before it
// returns; a failing command commits nothing.
#ifndef SLABFS_TOOLS_CMD_TREE_H_
#define SLABFS_TOOLS_CMD_TREE_H_

#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "slabfs/status.h"
#include "tools/commands.h"

namespace slabfs::tools {

struct CreateOptions {
  std::string file;
};
// Creates an empty container; an existing file is AlreadyExists.
Status RunCreate(const CreateOptions& o, std::ostream& out);

struct MkgroupOptions {
  std::string file;
  std::string path;
  bool parents = false;  // create missing ancestors; an existing group is fine
};
Status RunMkgroup(const MkgroupOptions& o, std::ostream& out);

struct MkdsetOptions {
  std::string file;
  std::string path;
  std::string dtype;      // "f4"
  std::string shape;      // "2000,2000"
  std::string chunks;     // "" lets the engine choose
  std::string fill;       // "" is zero
  std::string max_shape;  // "" is the shape; "unlimited,512,512"
  std::string index;      // "" is auto
  FilterArgs filters;     // none given: no filters
  bool sparse = false;    // only written elements are defined
  bool parents = false;
};
Status RunMkdset(const MkdsetOptions& o, std::ostream& out);

struct ResizeOptions {
  std::string file;
  std::string path;
  std::string shape;  // "1000,512,512"
};
Status RunResize(const ResizeOptions& o, std::ostream& out);

struct RmOptions {
  std::string file;
  std::string path;
  bool recursive = false;  // remove a group and everything under it
};
Status RunRm(const RmOptions& o, std::ostream& out);

struct MvOptions {
  std::string file;
  std::string from;
  std::string to;
};
Status RunMv(const MvOptions& o, std::ostream& out);

void AddTreeCommands(CLI::App& app, CommandTable& table);

}  // namespace slabfs::tools

#endif  // SLABFS_TOOLS_CMD_TREE_H_
