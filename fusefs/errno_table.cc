#include "fusefs/errno_table.h"

#include <cerrno>

namespace slabfs::fusefs {

int ErrnoFromCode(Code code) {
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

int ErrnoFromStatus(const Status& status) { return ErrnoFromCode(status.code()); }

}  // namespace slabfs::fusefs
