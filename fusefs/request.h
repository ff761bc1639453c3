// What every FUSE handler shares: reaching the Filesystem from a request,
// the guard that answers each request exactly once and keeps exceptions out
// of libfuse, and the one-line log of a refused operation. A refusal's
// errno is slabfs::ErrnoOf(status.code()), the one table
// (include/slabfs/status.h), which the Python binding's OSErrors use too.
#ifndef SLABFS_FUSEFS_REQUEST_H_
#define SLABFS_FUSEFS_REQUEST_H_

#include <cerrno>
#include <exception>
#include <new>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

#include "fusefs/filesystem.h"

namespace slabfs::fusefs {

inline Filesystem& Fs(fuse_req_t req) { return *static_cast<Filesystem*>(fuse_req_userdata(req)); }

// Logs an exception caught at the C boundary (and remembers it as the last
// refusal); never throws.
void LogUnexpected(std::string_view op, std::string_view what) noexcept;

// Runs a handler body. The body either replies itself and returns 0, or
// returns an errno and lets the guard reply with it; an exception becomes
// ENOMEM (std::bad_alloc) or EIO, with a log line. Bodies reply as their
// last step, so an exception can only come before any reply and the request
// is answered exactly once.
template <typename Body>
void Guard(fuse_req_t req, std::string_view op, Body&& body) noexcept {
  int err = 0;
  try {
    err = body();
  } catch (const std::bad_alloc&) {
    LogUnexpected(op, "out of memory");
    err = ENOMEM;
  } catch (const std::exception& e) {
    LogUnexpected(op, e.what());
    err = EIO;
  } catch (...) {
    LogUnexpected(op, "unknown exception");
    err = EIO;
  }
  if (err != 0) fuse_reply_err(req, err);
}

// Whether a refusal becomes the mount's last error (LastRefusal). Ordinary
// answers (a lookup of a missing name, an absent extended attribute) must
// not hide the refusal a person is asking about.
enum class Remember { kYes, kNo };

// Maps s through the errno table, logs "OP OBJECT refused (ERRNO): STATUS"
// and returns the errno; with Remember::kYes the line, with its time, also
// becomes LastRefusal(). Corruption and IOError are logged at error at
// least, whatever `level` says.
int Refuse(std::string_view op, std::string_view object, const Status& s,
           spdlog::level::level_enum level = spdlog::level::info, Remember remember = Remember::kYes);

// Refusals that are ordinary answers (a lookup of a missing name, an absent
// extended attribute) happen all the time and are logged at debug; these
// skip describing the object (a path walk) unless that level is on.
// `object` is called only when the line is logged.
template <typename ObjectFn>
int QuietRefuse(std::string_view op, ObjectFn&& object, const Status& s);
template <typename ObjectFn>
int QuietRefuseErrno(std::string_view op, ObjectFn&& object, int err, std::string_view why);

// While one lives, Refuse and RefuseErrno on this thread log at `floor` at
// least. setxattr of a user.* attribute takes warn: cp -a and rsync -X
// say nothing when an attribute they copy is refused (a fill value, a
// layout), so the log line is all that tells the copy means less.
class RefusalLevelFloor {
 public:
  explicit RefusalLevelFloor(spdlog::level::level_enum floor);
  ~RefusalLevelFloor();
  RefusalLevelFloor(const RefusalLevelFloor&) = delete;
  RefusalLevelFloor& operator=(const RefusalLevelFloor&) = delete;

 private:
  spdlog::level::level_enum saved_;
};

// The same for the few refusals that are not an engine Status: a name
// over 255 bytes, a buffer too small for an xattr, a missing handle.
int RefuseErrno(std::string_view op, std::string_view object, int err, std::string_view why,
                spdlog::level::level_enum level = spdlog::level::info, Remember remember = Remember::kYes);

// The last remembered refusal of this process (one daemon serves one
// mount): "2026-11-26 10:00:00 write /a/ds refused (EFBIG): out of range:
// ...", local time; empty before the first. The root's
// user.slab.last_error (xattr.h). Thread-safe.
std::string LastRefusal();

// "/a/b", or "inode N" for an object without a path (removed while open).
std::string Describe(Filesystem& fs, fuse_ino_t ino);
// "/a/b/name".
std::string DescribeChild(Filesystem& fs, fuse_ino_t parent, std::string_view name);

// The kernel passes names up to 1024 bytes; slabfs names are at most 255,
// and ENAMETOOLONG says so better than the engine's EINVAL would.
bool NameTooLong(const char* name);

// A buffer per worker thread for read replies: allocated once at the
// largest request size seen (max_read, 1 MiB), then reused, so a read costs
// no allocation and no page faults.
char* ReadBuffer(size_t size);

// The handle in fi->fh, or null if there is none or it is of the other kind.
FileHandle* AsFile(const fuse_file_info* fi);
DirHandle* AsDir(const fuse_file_info* fi);

bool LogsAt(spdlog::level::level_enum level);

template <typename ObjectFn>
int QuietRefuse(std::string_view op, ObjectFn&& object, const Status& s) {
  if (!LogsAt(spdlog::level::debug)) return ErrnoOf(s.code());
  return Refuse(op, object(), s, spdlog::level::debug, Remember::kNo);
}

template <typename ObjectFn>
int QuietRefuseErrno(std::string_view op, ObjectFn&& object, int err, std::string_view why) {
  if (!LogsAt(spdlog::level::debug)) return err;
  return RefuseErrno(op, object(), err, why, spdlog::level::debug, Remember::kNo);
}

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_REQUEST_H_
