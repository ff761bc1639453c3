#include "fusefs/log.h"

#define FUSE_USE_VERSION 314
#include <fcntl.h>
#include <fuse_log.h>
#include <syslog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include <fmt/format.h>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/syslog_sink.h>

#include "slabfs/container.h"

namespace slabfs::fusefs {
namespace {

constexpr const char* kPattern = "slabfs[%P]: %l: %v";
// syslog and journald stamp their lines; a file has only what we write.
constexpr const char* kFilePattern = "%Y-%m-%d %H:%M:%S.%e slabfs[%P]: %l: %v";
constexpr const char* kEngineLoggerName = "slabfs";  // as engine/util/log.cc looks it up

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
  // Set once by OpenLogFile, before other threads exist.
  std::shared_ptr<spdlog::sinks::basic_file_sink_mt> file;
};

Logging& State() {
  static Logging logging;
  return logging;
}

// fmt comes from libfuse, as for vprintf.
[[gnu::format(printf, 2, 0)]] void RouteFuseLog(enum fuse_log_level level, const char* fmt, va_list ap) {
  char buf[1024];
  int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  if (n <= 0) return;
  std::string_view msg(buf, std::min<size_t>(static_cast<size_t>(n), sizeof buf - 1));
  while (!msg.empty() && msg.back() == '\n') msg.remove_suffix(1);
  spdlog::level::level_enum l =
      State().fuse_debug.load(std::memory_order_relaxed) ? spdlog::level::info : spdlog::level::debug;
  if (level <= FUSE_LOG_ERR)
    l = spdlog::level::err;
  else if (level == FUSE_LOG_WARNING)
    l = spdlog::level::warn;
  else if (level <= FUSE_LOG_INFO)
    l = spdlog::level::info;
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

Status OpenLogFile(const std::string& path) {
  Logging& st = State();
  // Opened here first for a plain reason ("No such file or directory"); and
  // spdlog would create missing directories, hiding a mistyped path.
  int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::IOError(fmt::format("cannot open the log file {}: {}", path, std::strerror(errno)));
  }
  close(fd);
  std::shared_ptr<spdlog::sinks::basic_file_sink_mt> file;
  try {
    file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, /*truncate=*/false);
  } catch (const spdlog::spdlog_ex& e) {
    return Status::IOError(fmt::format("cannot open the log file {}: {}", path, e.what()));
  }
  file->set_pattern(kFilePattern);
  st.file = file;
  st.sink->add_sink(std::move(file));
  // A file sink buffers; a log someone reads after a refusal must hold it.
  st.fuse->flush_on(spdlog::level::trace);
  if (auto engine = spdlog::get(kEngineLoggerName)) engine->flush_on(spdlog::level::trace);
  return Status::OK();
}

void LogAfterDetach() {
  Logging& st = State();
  if (st.file != nullptr) {
    st.sink->set_sinks({st.file});
    return;
  }
  auto sys = std::make_shared<spdlog::sinks::syslog_sink_mt>("slabfs", LOG_PID, LOG_DAEMON,
                                                             /*enable_formatting=*/false);
  st.sink->set_sinks({std::move(sys)});
}

}  // namespace slabfs::fusefs
