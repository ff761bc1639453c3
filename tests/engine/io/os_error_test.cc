// engine/io/os_error: the one errno -> Status table and the one EINTR loop,
// which the container file, the CLI's streams and stores, and the mount's
// picture buffer all use.
#include "engine/io/os_error.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testutil/status_matchers.h"

namespace slabfs::engine {
namespace {

TEST(StatusFromErrnoTest, MapsEachErrnoToItsCode) {
  const std::vector<std::pair<int, Code>> table = {
      {ENOENT, Code::kNotFound},         {EEXIST, Code::kAlreadyExists},
      {ENOSPC, Code::kNoSpace},          {EDQUOT, Code::kNoSpace},
      {EROFS, Code::kReadOnly},          {EACCES, Code::kPermissionDenied},
      {EPERM, Code::kPermissionDenied},  {EISDIR, Code::kInvalidArgument},
      {ENOTDIR, Code::kInvalidArgument}, {ENAMETOOLONG, Code::kInvalidArgument},
      {ELOOP, Code::kInvalidArgument},   {EAGAIN, Code::kBusy},
      {EFBIG, Code::kOutOfRange},        {EIO, Code::kIOError},
      {EBADF, Code::kIOError},           {EINVAL, Code::kIOError},
  };
  for (const auto& [err, code] : table) EXPECT_EQ(StatusFromErrno(err, "f").code(), code) << err;
}

TEST(StatusFromErrnoTest, NamesWhatFailedAndWhy) {
  EXPECT_EQ(StatusFromErrno(ENOENT, "open /a/b").message(), "open /a/b: No such file or directory");
  EXPECT_EQ(StatusFromErrno(ENOSPC, "write x").message(), "write x: No space left on device");
}

TEST(RetryOnEintrTest, CallsAgainWhileInterrupted) {
  int calls = 0;
  const int r = RetryOnEintr([&] {
    if (++calls < 3) {
      errno = EINTR;
      return -1;
    }
    return 7;
  });
  EXPECT_EQ(r, 7);
  EXPECT_EQ(calls, 3);
}

TEST(RetryOnEintrTest, ReturnsOtherFailuresAtOnce) {
  int calls = 0;
  const ssize_t r = RetryOnEintr([&]() -> ssize_t {
    ++calls;
    errno = EIO;
    return -1;
  });
  EXPECT_EQ(r, -1);
  EXPECT_EQ(errno, EIO);
  EXPECT_EQ(calls, 1);
}

class FullyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/os_error_test-XXXXXX";
    fd_ = ::mkstemp(name);
    ASSERT_GE(fd_, 0);
    ::unlink(name);
  }
  void TearDown() override { ::close(fd_); }
  int fd_ = -1;
};

TEST_F(FullyTest, WritesAndReadsEverythingAtAnOffsetOrTheFilePosition) {
  const std::string data(100000, 'x');
  ASSERT_OK(WriteFully(fd_, data.data(), data.size(), "w", 10));
  ASSERT_OK(WriteFully(fd_, "ab", 2, "w"));  // the position is still 0
  std::string back(data.size() + 10, '\0');
  ASSERT_OK_AND_ASSIGN(size_t got, ReadFully(fd_, back.data(), back.size(), "r", 0));
  EXPECT_EQ(got, back.size());
  EXPECT_EQ(back.substr(0, 2), "ab");
  EXPECT_EQ(back.substr(10), data);
}

TEST_F(FullyTest, ReadStopsAtTheEndOfTheFile) {
  ASSERT_OK(WriteFully(fd_, "hello", 5, "w", 0));
  char buf[16];
  ASSERT_OK_AND_ASSIGN(size_t got, ReadFully(fd_, buf, sizeof buf, "r", 2));
  EXPECT_EQ(got, 3u);
  ASSERT_OK_AND_ASSIGN(got, ReadFully(fd_, buf, sizeof buf, "r", 100));
  EXPECT_EQ(got, 0u);
}

TEST_F(FullyTest, FailuresNameWhatFailed) {
  char buf[4];
  auto r = ReadFully(-1, buf, sizeof buf, "reading the thing");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kIOError);
  EXPECT_EQ(r.error().message().rfind("reading the thing: ", 0), 0u) << r.error().message();
  EXPECT_CODE(WriteFully(-1, buf, sizeof buf, "w"), Code::kIOError);
  EXPECT_OK(WriteFully(-1, buf, 0, "nothing to write"));
}

void OnAlarm(int) {}

TEST(ReadFullyTest, ReadsOnAfterASignalInterruptsIt) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  struct sigaction sa {
  }, old{};
  sa.sa_handler = OnAlarm;  // no SA_RESTART: the read fails with EINTR
  ASSERT_EQ(::sigaction(SIGALRM, &sa, &old), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::usleep(300000);
    (void)!::write(fds[1], "late", 4);
    ::_exit(0);
  }
  ::close(fds[1]);
  struct itimerval t {};
  t.it_value.tv_usec = 50000;
  ::setitimer(ITIMER_REAL, &t, nullptr);
  char buf[4];
  auto got = ReadFully(fds[0], buf, sizeof buf, "pipe");
  ::sigaction(SIGALRM, &old, nullptr);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(got.has_value()) << got.error().ToString();
  EXPECT_EQ(*got, 4u);
  EXPECT_EQ(std::string(buf, 4), "late");
}

}  // namespace
}  // namespace slabfs::engine
