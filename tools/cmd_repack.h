// The repack subcommand: writes a new container with the same groups,
// datasets and attributes as an existing one, optionally with new chunk
// shapes or new filters, and no free space inside it.
//
// The input is opened read-only. The output is built under a temporary name
// next to OUT, committed once, and only then linked to the name OUT, so a
// failed or interrupted repack never leaves a partial container named OUT
// (a failure removes the temporary file; a killed process may leave it).
#ifndef SLABFS_TOOLS_CMD_REPACK_H_
#define SLABFS_TOOLS_CMD_REPACK_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "slabfs/container.h"
#include "slabfs/status.h"
#include "slabfs/types.h"
#include "tools/commands.h"
#include "tools/convert/progress.h"

namespace slabfs::tools {

struct RepackOptions {
  std::string file;    // the container to read
  std::string output;  // the container to create; an existing file is AlreadyExists
  std::string chunks;  // "" keeps each dataset's chunks; else for datasets of its rank
  FilterArgs filters;  // none given: each dataset keeps its pipeline
  bool quiet = false;  // no progress bar
};

// Copies every group, dataset (dtype, shape, max shape, fill, chunks, index
// kind, filters, elements) and attribute of o.file into a new container
// o.output, then prints what it copied and the sizes before and after.
//
// A dataset keeps its index kind unless --chunks changes its chunk shape;
// then the engine chooses one for the new chunk grid (IndexKind::kAuto).
// Only chunks the input stores are written: regions it never stored stay
// unstored (they read as the fill value), so empty and sparse datasets stay
// small. Errors: AlreadyExists for an existing OUT, InvalidArgument for OUT
// naming the input or bad options, and whatever reading or writing meets.
Status RunRepack(const RepackOptions& o, std::ostream& out);

struct CopyCounts {
  uint64_t groups = 0;  // not counting the root
  uint64_t datasets = 0;
  uint64_t attributes = 0;
};

// The copy RunRepack makes, without the files around it: copies the
// attributes of the root and every group, dataset and attribute under it
// from `from` into `to`, an empty container open for writing, and does not
// commit. Datasets get `chunks` where the rank matches (a line on `notes`
// for each one that keeps its own) and the pipeline `filters` when given
// (canonical DatasetOptions::filters text). Each dataset is written in full
// before the next object, every destination chunk once and whole.
// With `progress`, each block copied is counted there, and the copy stops
// with its error once it was interrupted (Ctrl-C).
Result<CopyCounts> CopyContainer(const Container& from, Container& to, const std::optional<Dims>& chunks,
                                 const std::optional<std::string>& filters, std::ostream& notes,
                                 Progress* progress = nullptr);

// The bytes a repack reads, for the progress bar: each dataset's size scaled
// by the share of its chunks that are stored.
Result<uint64_t> BytesToCopy(const Container& c);

void AddRepackCommand(CLI::App& app, CommandTable& table);

}  // namespace slabfs::tools

#endif  // SLABFS_TOOLS_CMD_REPACK_H_
