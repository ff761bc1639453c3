// The daemon's logging. Two spdlog loggers share one sink: the daemon's
// own ("slabfs.fuse", returned by Log()) and the engine's (registered as
// "slabfs" before the engine creates its own). The sink writes to stderr
// until the daemon detaches, then to syslog. libfuse's messages go through
// Log() too.
//
// Thread safety: Log() may be used from any thread, before and after
// InitLogging. InitLogging runs once at startup; LogToSyslog may run while
// other threads log.
#ifndef SLABFS_FUSEFS_LOG_H_
#define SLABFS_FUSEFS_LOG_H_

#include <string_view>

#include <spdlog/spdlog.h>

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

// Sends every later line to syslog (ident "slabfs", facility daemon)
// instead of stderr.
void LogToSyslog();

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_LOG_H_
