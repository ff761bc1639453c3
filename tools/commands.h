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
#include <optional>
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
    // A command whose success has several outcomes (slab fsck: clean,
    // leaks, damage) sets the exit status here; null: 0 on success.
    const int* exit_status = nullptr;
  };

  void Add(CLI::App* app, CommandAction action, const int* exit_status = nullptr) {
    entries_.push_back({app, std::move(action), exit_status});
  }
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

// The filter options of mkdset, import --create and repack as given: the
// flags, which build the pipeline in the fixed order shuffle, deflate,
// checksum, or --filters, which names the filters in any order. An absent
// optional is an option not given.
struct FilterArgs {
  bool shuffle = false;
  std::optional<std::string> deflate;  // --deflate N, "1" to "9"
  bool checksum = false;
  std::optional<std::string> filters;  // --filters "deflate=3,shuffle", or "none"

  bool given() const { return shuffle || deflate || checksum || filters; }
};

// The pipeline FilterArgs ask for, in the canonical form DatasetInfo::filters
// uses ("shuffle,deflate=6,checksum"; "" for none). InvalidArgument naming
// the option for a deflate level that is not 1 to 9, an unknown or repeated
// filter in --filters, or --filters together with a flag.
Result<std::string> MakeFilterPipeline(const FilterArgs& args);

// Declares --shuffle, --deflate, --checksum and --filters on `sub`, bound to
// *args (which must outlive the parse); --filters excludes the other three.
// With `needs`, each requires that option (import's --create).
void AddFilterOptions(CLI::App* sub, FilterArgs* args, CLI::Option* needs = nullptr);

// The layout options of a new dataset as command-line text; "" leaves each
// to the engine (chunks, index), zero (fill) or the shape (max shape), and
// no filter options means no filters.
struct LayoutText {
  std::string_view chunks;
  std::string_view fill;
  std::string_view max_shape;  // "unlimited,512,512"
  std::string_view index;      // auto single compact fixed extensible btree
  FilterArgs filters;
  bool sparse = false;  // only written elements are defined (DatasetOptions::sparse)
};

// Builds DatasetOptions from command-line text: dtype and shape already
// parsed (a zero dimension is allowed only where the max shape lets it
// grow). Checks ranks against the shape, the max shape against the shape,
// the fill value against the dtype, and the filter options
// (MakeFilterPipeline).
Result<DatasetOptions> MakeDatasetOptions(DType dtype, const Dims& shape, const LayoutText& layout);

// "3.42x": logical bytes over stored bytes, the compression ratio `slab info`
// and `slab ls -l` show; "-" when nothing is stored.
std::string FormatRatio(uint64_t logical_bytes, uint64_t stored_bytes);

// "1 chunk", "3 chunks", "0 boxes": n and the noun, plural unless n is 1
// (`plural` when it is not the noun with an s).
std::string Counted(uint64_t n, std::string_view noun, std::string_view plural = {});

}  // namespace slabfs::tools

#endif  // SLABFS_TOOLS_COMMANDS_H_
