#include "fusefs/log.h"

#define FUSE_USE_VERSION 314
#include <fuse_log.h>
#include <syslog.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <memory>
#include <string>

#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/syslog_sink.h>

#include "slabfs/container.h"

namespace slabfs::fusefs {
namespace {

constexpr const char* kPattern = "slabfs[%P]: %l: %v";
constexpr const char* kEngineLoggerName = "slabfs";  // as engine/log.cc looks it up

struct Logging {
  Logging()
      : sink(std::make_shared<spdlog::sinks::dist_sink_mt>()),
        fuse(std::make_shared<spdlog::logger>("slabfs.fuse", sink)) {
    auto err = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    err->set_pattern(kPattern);
    sink->add_sink(std::move(err));
    fuse->set_level(spdlog::level::info);
  }
  // Swapping its children is internally locked, so the destination can
  // change while other threads log.
  std::shared_ptr<spdlog::sinks::dist_sink_mt> sink;
  std::shared_ptr<spdlog::logger> fuse;
  std::atomic<bool> fuse_debug{false};
};

Logging& State() {
  static Logging logging;
  return logging;
}

void RouteFuseLog(enum fuse_log_level level, const char* fmt, va_list ap) {
  char buf[1024];
  int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  if (n <= 0) return;
  std::string_view msg(buf, std::min<size_t>(static_cast<size_t>(n), sizeof buf - 1));
  while (!msg.empty() && msg.back() == '\n') msg.remove_suffix(1);
  spdlog::level::level_enum l =
      State().fuse_debug.load(std::memory_order_relaxed) ? spdlog::level::info
                                                         : spdlog::level::debug;
  if (level <= FUSE_LOG_ERR) l = spdlog::level::err;
  else if (level == FUSE_LOG_WARNING) l = spdlog::level::warn;
  else if (level <= FUSE_LOG_INFO) l = spdlog::level::info;
  State().fuse->log(l, "libfuse: {}", msg);
}

}  // namespace

spdlog::logger& Log() { return *State().fuse; }

std::string_view EngineLogLevel(std::string_view level) {
  if (level == "trace" || level == "debug" || level == "error" || level == "off") return level;
  return "warn";
}

void InitLogging(std::string_view level, bool fuse_debug) {
  Logging& st = State();
  st.fuse_debug = fuse_debug;
  st.fuse->set_level(spdlog::level::from_str(std::string(level)));
  // The engine looks its logger up by name and creates it only if missing;
  // giving it ours sends its lines where the daemon's go.
  if (auto engine = spdlog::get(kEngineLoggerName)) {
    engine->sinks().assign(1, st.sink);
  } else {
    spdlog::register_logger(std::make_shared<spdlog::logger>(kEngineLoggerName, st.sink));
  }
  Status s = SetLogLevel(EngineLogLevel(level));
  if (!s.ok()) st.fuse->warn("engine log level: {}", s.ToString());
  fuse_set_log_func(RouteFuseLog);
}

void LogToSyslog() {
  auto sys = std::make_shared<spdlog::sinks::syslog_sink_mt>("slabfs", LOG_PID, LOG_DAEMON,
                                                              /*enable_formatting=*/false);
  State().sink->set_sinks({std::move(sys)});
}

}  // namespace slabfs::fusefs
