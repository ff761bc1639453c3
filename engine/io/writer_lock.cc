#include "engine/io/writer_lock.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>

#include "engine/format/layout.h"

namespace slabfs::engine {
namespace {

constexpr char kLockMagic[] = "SLABLOCK\n";

std::string Sanitize(std::string_view s) {
  std::string out;
  for (char ch : s) out += (std::isprint(static_cast<unsigned char>(ch)) ? ch : '?');
  return out;
}

std::string HostName() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

// /proc/self/mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(std::string_view f) {
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] == '\\' && i + 3 < f.size() && std::isdigit(static_cast<unsigned char>(f[i + 1])) &&
        std::isdigit(static_cast<unsigned char>(f[i + 2])) && std::isdigit(static_cast<unsigned char>(f[i + 3]))) {
      out += static_cast<char>((f[i + 1] - '0') * 64 + (f[i + 2] - '0') * 8 + (f[i + 3] - '0'));
      i += 3;
    } else {
      out += f[i];
    }
  }
  return out;
}

std::string MountNamespace() {
  char buf[128] = {};
  const ssize_t n = readlink("/proc/self/ns/mnt", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

std::optional<LockRecord> ReadRecord(File* file) {
  char buf[kLockRecordBytes];
  if (!file->ReadAt(kLockRecordOffset, buf, sizeof buf).ok()) return std::nullopt;
  return DecodeLockRecord(std::string_view(buf, sizeof buf));
}

// Waits up to `wait` for `done`, while the holder named in the file is an
// unmounting daemon. Returns done()'s last answer.
template <typename Done>
bool WaitWhileUnmounting(File* file, std::chrono::milliseconds wait, Done done) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  auto pause = std::chrono::milliseconds(2);
  for (;;) {
    if (done()) return true;
    std::optional<LockRecord> r = ReadRecord(file);
    if (!r || !HolderIsUnmounting(*r) || std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

}  // namespace

LockRecord OwnLockRecord(std::string_view program, std::string_view mount) {
  LockRecord r;
  r.pid = std::to_string(getpid());
  r.host = HostName();
  r.program = std::string(program.substr(0, 128));
  r.mount = std::string(mount);
  if (!r.mount.empty()) r.mntns = MountNamespace();
  auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char when[64] = {};
  struct tm tmv;
  localtime_r(&now, &tmv);
  strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tmv);
  r.since = when;
  return r;
}

std::string EncodeLockRecord(const LockRecord& r) {
  std::string rec = std::string(kLockMagic) + "pid=" + r.pid + "\nhost=" + r.host + "\nprogram=" + r.program +
                    "\nsince=" + r.since + "\n";
  // A mount point that does not fit is left out: nobody waits then.
  const std::string mount = "mntns=" + r.mntns + "\nmount=" + r.mount + "\n";
  if (!r.mount.empty() && r.mount.find('\n') == std::string::npos && rec.size() + mount.size() < kLockRecordBytes)
    rec += mount;
  rec.resize(kLockRecordBytes, '\0');
  return rec;
}

std::optional<LockRecord> DecodeLockRecord(std::string_view rec) {
  if (rec.substr(0, sizeof kLockMagic - 1) != kLockMagic) return std::nullopt;
  rec.remove_prefix(sizeof kLockMagic - 1);
  rec = rec.substr(0, rec.find('\0'));
  LockRecord r;
  while (!rec.empty()) {
    size_t nl = rec.find('\n');
    std::string_view line = rec.substr(0, nl);
    size_t eq = line.find('=');
    if (eq != std::string_view::npos) {
      std::string_view k = line.substr(0, eq), v = line.substr(eq + 1);
      if (k == "pid")
        r.pid = Sanitize(v);
      else if (k == "host")
        r.host = Sanitize(v);
      else if (k == "program")
        r.program = Sanitize(v);
      else if (k == "since")
        r.since = Sanitize(v);
      else if (k == "mntns")
        r.mntns = Sanitize(v);
      else if (k == "mount")
        r.mount = std::string(v);  // compared, never printed raw
    }
    if (nl == std::string_view::npos) break;
    rec.remove_prefix(nl + 1);
  }
  if (r.program.empty()) return std::nullopt;
  return r;
}

std::string DescribeHolder(const std::optional<LockRecord>& r) {
  if (!r) return "another process";
  std::string d = r->program + " (pid " + r->pid;
  if (!r->host.empty()) d += " on " + r->host;
  if (!r->since.empty()) d += ", since " + r->since;
  if (!r->mount.empty()) d += ", mounted at " + Sanitize(r->mount);
  return d + ")";
}

bool IsMountPoint(std::string_view path) {
  std::ifstream f("/proc/self/mountinfo");
  std::string line;
  while (std::getline(f, line)) {
    // id parent major:minor root mount-point ...
    size_t pos = 0;
    for (int field = 0; field < 4 && pos != std::string::npos; ++field) pos = line.find(' ', pos + (field ? 1 : 0));
    if (pos == std::string::npos) continue;
    const size_t end = line.find(' ', pos + 1);
    if (Unescape(std::string_view(line).substr(pos + 1, end - pos - 1)) == path) return true;
  }
  return false;
}

bool HolderIsUnmounting(const LockRecord& r) {
  if (r.program != "slabfs" || r.mount.empty() || r.host != HostName()) return false;
  // In another mount namespace its mount point cannot be seen from here.
  if (r.mntns.empty() || r.mntns != MountNamespace()) return false;
  char* end = nullptr;
  const long pid = std::strtol(r.pid.c_str(), &end, 10);
  if (r.pid.empty() || *end != '\0' || pid <= 0 || pid > INT32_MAX) return false;
  // A daemon that has exited has let go (the lock goes with it).
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return false;
  return !IsMountPoint(r.mount);
}

Result<bool> WriterPresent(File* file) {
  SLABFS_ASSIGN_OR_RETURN(std::optional<uint64_t> at, file->LowestLockIn(kWriterLockByte, 1));
  return at.has_value();
}

Status AcquireWriterLock(File* file, std::chrono::milliseconds wait) {
  Status last;
  const bool got = WaitWhileUnmounting(file, wait, [&] {
    last = file->TryLock(kWriterLockByte, 1, /*exclusive=*/true);
    // No lock support at all: one writer cannot be enforced, but refusing
    // every write would be worse (documented in docs/format.md).
    if (last.code() == Code::kNotSupported) last = Status::OK();
    return last.code() != Code::kBusy;
  });
  if (got) return last;
  return Status::Busy(file->name() + " is open for writing by " + DescribeHolder(ReadRecord(file)));
}

void WaitForUnmountingWriter(File* file, std::chrono::milliseconds wait) {
  WaitWhileUnmounting(file, wait, [&] {
    Result<bool> locked = WriterPresent(file);
    return !locked || !*locked;
  });
}

}  // namespace slabfs::engine
