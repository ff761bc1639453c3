#include "fusefs/request.h"

#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace slabfs::fusefs {
namespace {

TEST(LastRefusalTest, RemembersTheLastRefusalWithItsTimeAndReason) {
  EXPECT_EQ(Refuse("write", "/run/temp [10, +20)",
                   Status::OutOfRange("/run/temp: write of 20 bytes at offset 10 reaches past the end")),
            EFBIG);
  std::string last = LastRefusal();
  // "YYYY-MM-DD HH:MM:SS " then the log line.
  ASSERT_GT(last.size(), 20u);
  EXPECT_EQ(last[4], '-');
  EXPECT_EQ(last[13], ':');
  EXPECT_EQ(last.substr(20),
            "write /run/temp [10, +20) refused (EFBIG): out of range: /run/temp: write of 20 bytes at "
            "offset 10 reaches past the end");
  EXPECT_EQ(RefuseErrno("lookup", "/x", ENAMETOOLONG, "names are at most 255 bytes"), ENAMETOOLONG);
  EXPECT_EQ(LastRefusal().substr(20), "lookup /x refused (ENAMETOOLONG): names are at most 255 bytes");
}

TEST(LastRefusalTest, OrdinaryAnswersAreNotRemembered) {
  RefuseErrno("mkdir", "/a", EEXIST, "exists");
  const std::string before = LastRefusal();
  auto where = [] { return std::string("/missing"); };
  EXPECT_EQ(QuietRefuse("lookup", where, Status::NotFound("/missing: no such object")), ENOENT);
  EXPECT_EQ(QuietRefuseErrno("getxattr user.x", where, ENODATA, "no attribute"), ENODATA);
  EXPECT_EQ(Refuse("lookup", "/missing", Status::NotFound("no"), spdlog::level::debug, Remember::kNo), ENOENT);
  EXPECT_EQ(LastRefusal(), before);
}

TEST(LastRefusalTest, ManyThreadsRefusingLeaveOneWholeLine) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i) {
        RefuseErrno("write", "/t" + std::to_string(t), EFBIG, std::string(100, 'a' + t), spdlog::level::trace);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::string last = LastRefusal();
  ASSERT_GT(last.size(), 100u);
  const char c = last.back();
  EXPECT_EQ(last.substr(last.size() - 100), std::string(100, c));
}

}  // namespace
}  // namespace slabfs::fusefs
