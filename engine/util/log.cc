// The engine's log lines, through spdlog, to stderr.
#include "engine/util/log.h"

#include <memory>
#include <string>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "slabfs/container.h"

namespace slabfs {
namespace engine {
namespace {

std::shared_ptr<spdlog::logger> Logger() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::get("slabfs");
    if (!l) l = spdlog::stderr_logger_mt("slabfs");
    l->set_level(spdlog::level::warn);
    return l;
  }();
  return logger;
}

}  // namespace

void LogWarn(std::string_view msg) { Logger()->warn("{}", msg); }

}  // namespace engine

Status SetLogLevel(std::string_view level) {
  auto lvl = spdlog::level::from_str(std::string(level));
  if (lvl == spdlog::level::off && level != "off")
    return Status::InvalidArgument("unknown log level '" + std::string(level) +
                                   "' (use trace, debug, info, warn, error or off)");
  engine::Logger()->set_level(lvl);
  return Status::OK();
}

}  // namespace slabfs
