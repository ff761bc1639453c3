#include "fusefs/errno_table.h"

namespace slabfs::fusefs {

int ErrnoFromCode(Code code) { return ErrnoOf(code); }

int ErrnoFromStatus(const Status& status) { return ErrnoFromCode(status.code()); }

}  // namespace slabfs::fusefs
