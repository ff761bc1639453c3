// The attr subcommand: list, print, set or delete the attributes of a group
// or dataset. Listing and printing open the container read-only; setting and
// deleting open it for writing and commit.
#ifndef SLABFS_TOOLS_CMD_ATTR_H_
#define SLABFS_TOOLS_CMD_ATTR_H_

#include <optional>
#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "slabfs/status.h"
#include "slabfs/types.h"
#include "tools/commands.h"

namespace slabfs::tools {

struct AttrOptions {
  std::string file;
  std::string path;
  std::optional<std::string> name;   // absent: list every attribute
  std::optional<std::string> value;  // present: set the attribute
  bool remove = false;               // --delete: delete `name`
  bool force_string = false;         // --string: store `value` as a string
  std::string dtype;                 // --dtype: store `value` as numbers of this type
};
Status RunAttr(const AttrOptions& o, std::ostream& out);

// The attribute `attr NAME VALUE` stores: a string with force_string, numbers
// of `dtype` when it is not empty (VALUE is comma-separated), else what
// Attribute::FromText infers. InvalidArgument for a value that does not fit.
Result<Attribute> MakeAttribute(const std::string& value, bool force_string, const std::string& dtype);

void AddAttrCommand(CLI::App& app, CommandTable& table);

}  // namespace slabfs::tools

#endif  // SLABFS_TOOLS_CMD_ATTR_H_
