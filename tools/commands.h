// The pieces every `slab` subcommand shares: the table that maps a parsed
// subcommand to its action, and helpers for checking arguments and adding
// context to errors.
//
// Each cmd_*.{h,cc} pair holds one group of subcommands: an options struct
// and a Run function per command (callable from tests), and an Add function
// that declares the command's arguments to CLI11 and registers its action.
// A Run function writes its normal output to `out`; it reports failure only
// through the returned Status, which main prints as one line on stderr.
#ifndef SLABFS_TOOLS_COMMANDS_H_
#define SLABFS_TOOLS_COMMANDS_H_

#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "slabfs/status.h"
#include "slabfs/types.h"

namespace slabfs::tools {

// Import and export move data in blocks of about this many bytes.
inline constexpr size_t kTransferBlockBytes = 16u << 20;

using CommandAction = std::function<Status(std::ostream& out)>;

class CommandTable {
 public:
  struct Entry {
    CLI::App* app = nullptr;
    CommandAction action;
  };

  void Add(CLI::App* app, CommandAction action) { entries_.push_back({app, std::move(action)}); }
  // The subcommand the command line selected, or nullptr.
  const Entry* Parsed() const {
    for (const Entry& e : entries_) {
      if (e.app->parsed()) return &e;
    }
    return nullptr;
  }

 private:
  std::vector<Entry> entries_;
};

// Checks an object path argument before the container is opened: absolute,
// every component a valid name. InvalidArgument naming the path otherwise.
Status CheckObjectPath(std::string_view path);

// The path of the group that holds `path` ("/" for a top-level object), for
// a path CheckObjectPath accepted.
std::string ParentPath(std::string_view path);
// Whether `path` names the root group ("/", "//").
bool IsRootPath(std::string_view path);

// Prefixes `context` to a failed status unless its message already names it
// (engine messages usually name the path themselves).
Status AddContext(Status s, std::string_view context);

// Parses a --shape, --maxshape or --chunks argument with ParseDims; errors
// name the option.
Result<Dims> ParseDimsOption(std::string_view option, std::string_view text, bool allow_unlimited = false,
                             bool allow_zero = false);

// The layout options of a new dataset as command-line text; "" leaves each
// to the engine (chunks, index), zero (fill) or the shape (max shape).
struct LayoutText {
  std::string_view chunks;
  std::string_view fill;
  std::string_view max_shape;  // "unlimited,512,512"
  std::string_view index;      // auto single compact fixed extensible btree
};

// Builds DatasetOptions from command-line text: dtype and shape already
// parsed (a zero dimension is allowed only where the max shape lets it
// grow). Checks ranks against the shape, the max shape against the shape,
// and the fill value against the dtype.
Result<DatasetOptions> MakeDatasetOptions(DType dtype, const Dims& shape, const LayoutText& layout);

}  // namespace slabfs::tools

#endif  // SLABFS_TOOLS_COMMANDS_H_
