#include "slabfs/status.h"

#include <cerrno>

namespace slabfs {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kNotFound: return "not found";
    case Code::kAlreadyExists: return "already exists";
    case Code::kInvalidArgument: return "invalid argument";
    case Code::kCorruption: return "corruption";
    case Code::kIOError: return "I/O error";
    case Code::kNoSpace: return "no space";
    case Code::kNotSupported: return "not supported";
    case Code::kBusy: return "busy";
    case Code::kReadOnly: return "read-only";
    case Code::kNotEmpty: return "not empty";
    case Code::kOutOfRange: return "out of range";
    case Code::kPermissionDenied: return "permission denied";
    case Code::kNotAGroup: return "not a group";
    case Code::kNotADataset: return "not a dataset";
  }
  return "unknown";
}

Status::Status(Code code, std::string message) {
  if (code != Code::kOk) rep_ = std::make_unique<Rep>(Rep{code, std::move(message)});
}

Status::Status(const Status& other) : rep_(other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) rep_ = other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr;
  return *this;
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return rep_ ? rep_->message : kEmpty;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(CodeName(rep_->code));
  if (!rep_->message.empty()) {
    s += ": ";
    s += rep_->message;
  }
  return s;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return Status();
  std::string m(context);
  if (!rep_->message.empty()) {
    m += ": ";
    m += rep_->message;
  }
  return Status(rep_->code, std::move(m));
}

int ErrnoOf(Code code) {
  switch (code) {
    case Code::kOk: return 0;
    case Code::kNotFound: return ENOENT;
    case Code::kAlreadyExists: return EEXIST;
    case Code::kInvalidArgument: return EINVAL;
    // A checksum failure is a media error to the caller, like a bad sector.
    case Code::kCorruption: return EIO;
    case Code::kIOError: return EIO;
    case Code::kNoSpace: return ENOSPC;
    case Code::kNotSupported: return ENOTSUP;
    case Code::kBusy: return EBUSY;
    case Code::kReadOnly: return EROFS;
    case Code::kNotEmpty: return ENOTEMPTY;
    case Code::kOutOfRange: return EFBIG;
    case Code::kPermissionDenied: return EPERM;
    case Code::kNotAGroup: return ENOTDIR;
    case Code::kNotADataset: return EISDIR;
  }
  return EIO;
}

}  // namespace slabfs
