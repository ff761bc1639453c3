#include "fusefs/request.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "fusefs/log.h"

namespace slabfs::fusefs {
namespace {

const char* ErrnoName(int err) {
  const char* name = strerrorname_np(err);
  return name != nullptr ? name : "?";
}

// The last remembered refusal. Its mutex is a leaf: nothing else is locked
// or logged while it is held.
struct LastRefusalState {
  std::mutex mu;
  std::string line;  // guarded by mu
};

LastRefusalState& Last() {
  static LastRefusalState last;
  return last;
}

void RememberRefusal(std::string line) {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::string stamped = fmt::format("{:%Y-%m-%d %H:%M:%S} {}", fmt::localtime(now), line);
  LastRefusalState& last = Last();
  std::lock_guard lock(last.mu);
  last.line.swap(stamped);
}

}  // namespace

void LogUnexpected(std::string_view op, std::string_view what) noexcept {
  try {
    Log().error("{}: unexpected failure: {}", op, what);
    RememberRefusal(fmt::format("{}: unexpected failure: {}", op, what));
  } catch (...) {
  }
}

std::string LastRefusal() {
  LastRefusalState& last = Last();
  std::lock_guard lock(last.mu);
  return last.line;
}

namespace {
thread_local spdlog::level::level_enum refusal_floor = spdlog::level::trace;
}  // namespace

RefusalLevelFloor::RefusalLevelFloor(spdlog::level::level_enum floor) : saved_(refusal_floor) {
  refusal_floor = std::max(refusal_floor, floor);
}

RefusalLevelFloor::~RefusalLevelFloor() { refusal_floor = saved_; }

int Refuse(std::string_view op, std::string_view object, const Status& s, spdlog::level::level_enum level,
           Remember remember) {
  level = std::max(level, refusal_floor);
  int err = ErrnoOf(s.code());
  // Damaged bytes (a chunk failing its checksum or decompression) and
  // failing syscalls are not answers to a bad request: they show even when
  // the daemon logs only errors.
  if (s.code() == Code::kCorruption || s.code() == Code::kIOError) {
    level = std::max(level, spdlog::level::err);
  }
  std::string line = fmt::format("{} {} refused ({}): {}", op, object, ErrnoName(err), s.ToString());
  Log().log(level, "{}", line);
  if (remember == Remember::kYes) RememberRefusal(std::move(line));
  return err;
}

int RefuseErrno(std::string_view op, std::string_view object, int err, std::string_view why,
                spdlog::level::level_enum level, Remember remember) {
  level = std::max(level, refusal_floor);
  std::string line = fmt::format("{} {} refused ({}): {}", op, object, ErrnoName(err), why);
  Log().log(level, "{}", line);
  if (remember == Remember::kYes) RememberRefusal(std::move(line));
  return err;
}

std::string Describe(Filesystem& fs, fuse_ino_t ino) {
  auto path = fs.store.PathOf(ino);
  return path ? *path : fmt::format("inode {}", ino);
}

std::string DescribeChild(Filesystem& fs, fuse_ino_t parent, std::string_view name) {
  auto path = fs.store.PathOf(parent);
  if (!path) return fmt::format("'{}' in inode {}", name, parent);
  return *path == "/" ? fmt::format("/{}", name) : fmt::format("{}/{}", *path, name);
}

bool LogsAt(spdlog::level::level_enum level) { return Log().should_log(level); }

bool NameTooLong(const char* name) { return std::strlen(name) > kMaxNameBytes; }

FileHandle* AsFile(const fuse_file_info* fi) {
  if (fi == nullptr || fi->fh == 0) return nullptr;
  auto* h = reinterpret_cast<Handle*>(fi->fh);
  return h->kind == HandleKind::kFile ? static_cast<FileHandle*>(h) : nullptr;
}

DirHandle* AsDir(const fuse_file_info* fi) {
  if (fi == nullptr || fi->fh == 0) return nullptr;
  auto* h = reinterpret_cast<Handle*>(fi->fh);
  return h->kind == HandleKind::kDir ? static_cast<DirHandle*>(h) : nullptr;
}

char* ReadBuffer(size_t size) {
  thread_local std::unique_ptr<char[]> buffer;
  thread_local size_t capacity = 0;
  if (size > capacity) {
    buffer = std::make_unique_for_overwrite<char[]>(size);
    capacity = size;
  }
  return buffer.get();
}

}  // namespace slabfs::fusefs
