// The `slab` command line: builds the CLI11 application with every
// subcommand, parses argv and runs the chosen command.
//
// Exit status: 0 on success; 1 when the command fails, with one line on
// stderr ("slab: mkdset: /a/ds: already exists"); 2 for a usage error
// (unknown command or option, missing argument), with CLI11's message, or
// "slab: unknown command 'WORD'", on stderr.
// No exception escapes.
#ifndef SLABFS_TOOLS_SLAB_APP_H_
#define SLABFS_TOOLS_SLAB_APP_H_

#include <string>
#include <string_view>
#include <vector>

#include "slabfs/status.h"

namespace slabfs::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// The version `slab --version` prints; the same as the CMake project version.

int RunSlab(int argc, char** argv);

// The stderr line for a failed command, without the newline.
std::string FailureLine(std::string_view command, const Status& s);

// What `slab WORD` prints when WORD is none of `commands`: "slab: unknown
// command 'WORD'", the nearest command if one is a near miss, and a hint.
std::string UnknownCommandMessage(std::string_view word, const std::vector<std::string>& commands);

}  // namespace slabfs::tools

#endif  // SLABFS_TOOLS_SLAB_APP_H_
