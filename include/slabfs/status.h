// Status and Result: how every fallible slabfs call reports failure.
//
// Nothing throws across the slabfs API. A call returns a Status (success or
// a code plus a message naming the path, dataset or chunk involved), or a
// Result<T> = std::expected<T, Status>.
//
// The codes are few and each means one thing to a caller; ErrnoOf maps each
// code to exactly one errno, for the FUSE daemon and the Python binding.
#ifndef SLABFS_STATUS_H_
#define SLABFS_STATUS_H_

#include <expected>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace slabfs {

enum class Code : unsigned char {
  kOk = 0,
  kNotFound,          // no object, attribute or container by that name
  kAlreadyExists,     // the name is taken
  kInvalidArgument,   // bad name, shape, dtype, selection, offset or size
  kCorruption,        // bytes read from the container fail a check
  kIOError,           // the operating system refused a read, write or sync
  kNoSpace,           // the disk is full
  kNotSupported,      // a valid request slabfs does not do
  kBusy,              // another process holds the container for writing
  kReadOnly,          // a write to a container opened read-only
  kNotEmpty,          // removing a group that has children
  kOutOfRange,        // a write past the end of a dataset that cannot grow
  kPermissionDenied,  // a change to something that is read-only by nature
  kNotAGroup,         // a path goes through, or names, a dataset where a group is needed
  kNotADataset,       // a group where a dataset is needed
};

// The stable lower-case name of a code, e.g. "not found".
std::string_view CodeName(Code code);

// The errno a POSIX interface answers for a code -- the mount, and the
// OSErrors of the Python binding -- from the one table (0 for kOk):
// ENOENT, EEXIST, EINVAL, EIO (corruption is a media error to the caller,
// like a bad sector), ENOSPC, ENOTSUP, EBUSY, EROFS, ENOTEMPTY, EFBIG,
// EPERM, ENOTDIR, EISDIR.
int ErrnoOf(Code code);

class Status {
 public:
  Status() = default;  // OK
  Status(Code code, std::string message);
  // Lets SLABFS_ASSIGN_OR_RETURN return from functions that return Status.
  Status(std::unexpected<Status> u) : Status(std::move(u.error())) {}  // NOLINT

  static Status OK() { return Status(); }
  static Status NotFound(std::string msg) { return Status(Code::kNotFound, std::move(msg)); }
  static Status AlreadyExists(std::string msg) { return Status(Code::kAlreadyExists, std::move(msg)); }
  static Status InvalidArgument(std::string msg) { return Status(Code::kInvalidArgument, std::move(msg)); }
  static Status Corruption(std::string msg) { return Status(Code::kCorruption, std::move(msg)); }
  static Status IOError(std::string msg) { return Status(Code::kIOError, std::move(msg)); }
  static Status NoSpace(std::string msg) { return Status(Code::kNoSpace, std::move(msg)); }
  static Status NotSupported(std::string msg) { return Status(Code::kNotSupported, std::move(msg)); }
  static Status Busy(std::string msg) { return Status(Code::kBusy, std::move(msg)); }
  static Status ReadOnly(std::string msg) { return Status(Code::kReadOnly, std::move(msg)); }
  static Status NotEmpty(std::string msg) { return Status(Code::kNotEmpty, std::move(msg)); }
  static Status OutOfRange(std::string msg) { return Status(Code::kOutOfRange, std::move(msg)); }
  static Status PermissionDenied(std::string msg) { return Status(Code::kPermissionDenied, std::move(msg)); }
  static Status NotAGroup(std::string msg) { return Status(Code::kNotAGroup, std::move(msg)); }
  static Status NotADataset(std::string msg) { return Status(Code::kNotADataset, std::move(msg)); }

  bool ok() const { return rep_ == nullptr; }
  Code code() const { return rep_ ? rep_->code : Code::kOk; }
  // The message alone ("" when OK).
  const std::string& message() const;
  // "corruption: dataset /a/b chunk (3,4): checksum mismatch", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "context: message"; OK stays OK.
  Status WithContext(std::string_view context) const;

  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

 private:
  struct Rep {
    Code code;
    std::string message;
  };
  std::unique_ptr<Rep> rep_;  // null when OK: a successful Status costs nothing
};

template <typename T>
using Result = std::expected<T, Status>;

// Wraps a non-OK Status for returning from a function that returns Result<T>.
inline std::unexpected<Status> Err(Status s) { return std::unexpected<Status>(std::move(s)); }

}  // namespace slabfs

// Return-if-error helpers, in the TensorStore / Abseil manner.
#define SLABFS_CONCAT_INNER_(a, b) a##b
#define SLABFS_CONCAT_(a, b) SLABFS_CONCAT_INNER_(a, b)

#define SLABFS_RETURN_IF_ERROR(expr) SLABFS_RETURN_IF_ERROR_IMPL_(SLABFS_CONCAT_(slabfs_status_, __COUNTER__), expr)
#define SLABFS_RETURN_IF_ERROR_IMPL_(tmp, expr) \
  do {                                          \
    ::slabfs::Status tmp = (expr);              \
    if (!tmp.ok()) return tmp;                  \
  } while (0)

// For use in functions returning Result<T>.
#define SLABFS_RETURN_IF_ERROR_R(expr) SLABFS_RETURN_IF_ERROR_R_IMPL_(SLABFS_CONCAT_(slabfs_status_, __COUNTER__), expr)
#define SLABFS_RETURN_IF_ERROR_R_IMPL_(tmp, expr)        \
  do {                                                   \
    ::slabfs::Status tmp = (expr);                       \
    if (!tmp.ok()) return ::slabfs::Err(std::move(tmp)); \
  } while (0)

// SLABFS_ASSIGN_OR_RETURN(auto x, Foo()); works in functions returning
// Status or Result<U>.
#define SLABFS_ASSIGN_OR_RETURN(lhs, expr) \
  SLABFS_ASSIGN_OR_RETURN_IMPL_(SLABFS_CONCAT_(slabfs_result_, __COUNTER__), lhs, expr)
#define SLABFS_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr)                 \
  auto tmp = (expr);                                                  \
  if (!tmp.has_value()) return ::slabfs::Err(std::move(tmp).error()); \
  lhs = std::move(tmp).value()

#endif  // SLABFS_STATUS_H_
