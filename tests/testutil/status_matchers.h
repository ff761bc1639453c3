// ASSERT_OK and friends for slabfs::Status and Result<T>.
#ifndef SLABFS_TESTS_TESTUTIL_STATUS_MATCHERS_H_
#define SLABFS_TESTS_TESTUTIL_STATUS_MATCHERS_H_

#include <gtest/gtest.h>

#include "slabfs/status.h"

namespace slabfs::testutil {
inline const Status& AsStatus(const Status& s) { return s; }
template <typename T>
Status AsStatus(const Result<T>& r) {
  return r.has_value() ? Status::OK() : r.error();
}
}  // namespace slabfs::testutil

#define ASSERT_OK(expr)                                       \
  do {                                                        \
    ::slabfs::Status s_ = ::slabfs::testutil::AsStatus(expr); \
    ASSERT_TRUE(s_.ok()) << #expr << " -> " << s_.ToString(); \
  } while (0)
#define EXPECT_OK(expr)                                       \
  do {                                                        \
    ::slabfs::Status s_ = ::slabfs::testutil::AsStatus(expr); \
    EXPECT_TRUE(s_.ok()) << #expr << " -> " << s_.ToString(); \
  } while (0)
#define EXPECT_CODE(expr, c)                                     \
  do {                                                           \
    ::slabfs::Status s_ = ::slabfs::testutil::AsStatus(expr);    \
    EXPECT_EQ(s_.code(), c) << #expr << " -> " << s_.ToString(); \
  } while (0)
#define ASSERT_CODE(expr, c)                                     \
  do {                                                           \
    ::slabfs::Status s_ = ::slabfs::testutil::AsStatus(expr);    \
    ASSERT_EQ(s_.code(), c) << #expr << " -> " << s_.ToString(); \
  } while (0)

#define SLABFS_TEST_CONCAT_(a, b) a##b
#define SLABFS_TEST_CONCAT(a, b) SLABFS_TEST_CONCAT_(a, b)
#define ASSERT_OK_AND_ASSIGN(lhs, expr) ASSERT_OK_AND_ASSIGN_IMPL_(SLABFS_TEST_CONCAT(r_, __LINE__), lhs, expr)
#define ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, expr)                           \
  auto tmp = (expr);                                                         \
  ASSERT_TRUE(tmp.has_value()) << #expr << " -> " << tmp.error().ToString(); \
  lhs = std::move(tmp).value()

#endif  // SLABFS_TESTS_TESTUTIL_STATUS_MATCHERS_H_
