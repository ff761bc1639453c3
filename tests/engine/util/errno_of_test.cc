// slabfs::ErrnoOf, the one table from a failure code to an errno (the
// mount's answers and the Python binding's OSErrors).
#include "slabfs/status.h"

#include <cerrno>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace slabfs {
namespace {

TEST(ErrnoOfTest, MapsEveryCodeToItsErrno) {
  const std::vector<std::pair<Code, int>> table = {
      {Code::kOk, 0},
      {Code::kNotFound, ENOENT},
      {Code::kAlreadyExists, EEXIST},
      {Code::kInvalidArgument, EINVAL},
      {Code::kCorruption, EIO},
      {Code::kIOError, EIO},
      {Code::kNoSpace, ENOSPC},
      {Code::kNotSupported, ENOTSUP},
      {Code::kBusy, EBUSY},
      {Code::kReadOnly, EROFS},
      {Code::kNotEmpty, ENOTEMPTY},
      {Code::kOutOfRange, EFBIG},
      {Code::kPermissionDenied, EPERM},
      {Code::kNotAGroup, ENOTDIR},
      {Code::kNotADataset, EISDIR},
  };
  for (const auto& [code, err] : table) {
    EXPECT_EQ(ErrnoOf(code), err) << "code " << static_cast<int>(code);
  }
}

TEST(ErrnoOfTest, UnknownCodeIsEio) { EXPECT_EQ(ErrnoOf(static_cast<Code>(200)), EIO); }

}  // namespace
}  // namespace slabfs
