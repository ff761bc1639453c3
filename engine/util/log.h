// The engine's log lines (spdlog behind it, see engine/util/log.cc).
#ifndef SLABFS_ENGINE_UTIL_LOG_H_
#define SLABFS_ENGINE_UTIL_LOG_H_

#include <string_view>

namespace slabfs::engine {

// A warning: a refused operation, corruption found, a failed commit.
void LogWarn(std::string_view msg);

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_UTIL_LOG_H_
