// Where a slabfs Status becomes an errno in the daemon.
//
// Every FUSE handler that refuses a request maps the engine's Code through
// here, so the same engine condition always reaches the caller as the same
// errno. The table itself is slabfs::ErrnoOf (include/slabfs/status.h),
// which the Python binding's OSErrors use too. Thread-safe (pure functions).
#ifndef SLABFS_FUSEFS_ERRNO_TABLE_H_
#define SLABFS_FUSEFS_ERRNO_TABLE_H_

#include "slabfs/status.h"

namespace slabfs::fusefs {

// The errno for a failure code; 0 for Code::kOk. A code missing from the
// table (a newer engine) maps to EIO.
int ErrnoFromCode(Code code);

// ErrnoFromCode(status.code()).
int ErrnoFromStatus(const Status& status);

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_ERRNO_TABLE_H_
