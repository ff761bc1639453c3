#include "fusefs/errno_table.h"

#include <cerrno>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace slabfs::fusefs {
namespace {

TEST(ErrnoTableTest, MapsEveryCodeToItsErrno) {
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
    EXPECT_EQ(ErrnoFromCode(code), err) << "code " << static_cast<int>(code);
  }
}

TEST(ErrnoTableTest, UnknownCodeIsEio) {
  EXPECT_EQ(ErrnoFromCode(static_cast<Code>(200)), EIO);
}

TEST(ErrnoTableTest, StatusUsesItsCode) {
  EXPECT_EQ(ErrnoFromStatus(Status::OK()), 0);
  EXPECT_EQ(ErrnoFromStatus(Status::OutOfRange("write past the end")), EFBIG);
  EXPECT_EQ(ErrnoFromStatus(Status::NotEmpty("/a has children")), ENOTEMPTY);
}

}  // namespace
}  // namespace slabfs::fusefs
