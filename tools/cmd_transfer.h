// Subcommands that move element data between a dataset and a file: import
// and export. Both stream in blocks of about kTransferBlockBytes, so inputs
// and outputs of any size go through bounded memory.
//
// An import either writes the whole input and commits, or fails and commits
// nothing (the dataset keeps its previous contents; with --create, it is not
// created). Inputs are raw little-endian bytes in C order, or a .npy file,
// recognised by its magic bytes whatever its name.
#ifndef SLABFS_TOOLS_CMD_TRANSFER_H_
#define SLABFS_TOOLS_CMD_TRANSFER_H_

#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "slabfs/status.h"
#include "tools/commands.h"
#include "tools/convert/convert.h"

namespace slabfs::tools {

struct ImportOptions {
  std::string file;
  std::string path;
  std::string input;                // a file, or "-" for stdin
  bool create = false;              // make the dataset from the .npy header, or --dtype/--shape for raw
  bool parents = false;             // with create: make missing parent groups
  std::string dtype;                // raw input with create
  std::string shape;                // raw input with create
  std::string chunks;               // with create
  std::string fill;                 // with create
  std::string max_shape;            // with create
  std::string index;                // with create
  FilterArgs filters;               // with create
  bool sparse = false;              // with create
  convert::TreeImportOptions tree;  // --path, --into, --strict, --quiet (tree import)
};
Status RunImport(const ImportOptions& o, std::ostream& out);

struct ExportOptions {
  std::string file;
  std::string path;
  std::string output;           // a file, or "-" for stdout
  std::string format = "auto";  // auto (by extension), raw, npy, hdf5, zarr2, zarr3
  std::string tree_path;        // --path: tree export of this object
  bool quiet = false;
};
Status RunExport(const ExportOptions& o, std::ostream& out);

void AddTransferCommands(CLI::App& app, CommandTable& table);

}  // namespace slabfs::tools

#endif  // SLABFS_TOOLS_CMD_TRANSFER_H_
