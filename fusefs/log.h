// The daemon's logging. Two spdlog loggers share one sink: the daemon's
// own ("slabfs.fuse", returned by Log()) and the engine's (registered as
// "slabfs" before the engine creates its own). The sink writes to stderr
// until the daemon detaches, and to the log file (-o log_file) if one is
// open; once detached, to the log file alone, or to syslog (ident slabfs,
// facility daemon) without one. libfuse's messages go through Log() too.
//
// Thread safety: Log() may be used from any thread, before and after
// InitLogging. InitLogging and OpenLogFile run once at startup; LogAfterDetach
// may run while other threads log.
#ifndef SLABFS_FUSEFS_LOG_H_
#define SLABFS_FUSEFS_LOG_H_

#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

#include "slabfs/status.h"

namespace slabfs::fusefs {

// The daemon's logger; usable before InitLogging (stderr, level info).
spdlog::logger& Log();

// Sets the daemon's level (one of IsLogLevel's names) and the engine's:
// the same for trace and debug, else at least warn, because the daemon
// already logs every refused operation with the object it concerns and the
// engine's info lines would repeat them. Routes libfuse's messages to Log();
// with fuse_debug (-d), libfuse's request trace shows at level info.
void InitLogging(std::string_view level, bool fuse_debug = false);

// The engine's level for a daemon level, as InitLogging sets it.
std::string_view EngineLogLevel(std::string_view level);

// Also writes every line to the file at `path` (appended to; created with
// mode 0644 if missing), each with its date and time, flushed line by line
// so that `tail -f` shows it at once. IOError naming the path if it cannot
// be opened.
Status OpenLogFile(const std::string& path);

// The daemon has left the terminal: every later line goes to the log file
// if OpenLogFile opened one, else to syslog.
void LogAfterDetach();

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_LOG_H_
