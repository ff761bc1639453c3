#include "fusefs/options.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace slabfs::fusefs {
namespace {

using std::chrono::milliseconds;

TEST(ParseSizeTest, AcceptsPlainBytesAndBinarySuffixes) {
  EXPECT_EQ(ParseSize("1048576").value(), 1048576u);
  EXPECT_EQ(ParseSize("512K").value(), 512u << 10);
  EXPECT_EQ(ParseSize("64M").value(), 64u << 20);
  EXPECT_EQ(ParseSize("64m").value(), 64u << 20);
  EXPECT_EQ(ParseSize("64MiB").value(), 64u << 20);
  EXPECT_EQ(ParseSize("64MB").value(), 64u << 20);
  EXPECT_EQ(ParseSize("1G").value(), 1ull << 30);
  EXPECT_EQ(ParseSize("2T").value(), 2ull << 40);
  EXPECT_EQ(ParseSize("1.5G").value(), 3ull << 29);
  EXPECT_EQ(ParseSize("100B").value(), 100u);
}

TEST(ParseSizeTest, RejectsMalformedZeroAndOverflowingSizes) {
  for (const char* bad :
       {"", "M", "-1", "0", "0M", "12Q", "1..5G", "abc", "64 M", "99999999999999999999", "20000000T", "0.1"}) {
    auto r = ParseSize(bad);
    EXPECT_FALSE(r.has_value()) << bad;
    if (!r) {
      EXPECT_EQ(r.error().code(), Code::kInvalidArgument) << bad;
    }
  }
}

TEST(ParseIntervalTest, AcceptsSecondsWithOptionalSuffix) {
  EXPECT_EQ(ParseInterval("5").value(), milliseconds(5000));
  EXPECT_EQ(ParseInterval("0.25").value(), milliseconds(250));
  EXPECT_EQ(ParseInterval("10s").value(), milliseconds(10000));
  EXPECT_EQ(ParseInterval("0").value(), milliseconds(0));
}

TEST(ParseIntervalTest, RejectsNegativeHugeAndMalformed) {
  for (const char* bad : {"", "-1", "x", "5m", "100000", "1e"}) {
    EXPECT_FALSE(ParseInterval(bad).has_value()) << bad;
  }
}

TEST(IsLogLevelTest, KnowsTheSixLevels) {
  for (const char* l : {"trace", "debug", "info", "warn", "error", "off"}) {
    EXPECT_TRUE(IsLogLevel(l)) << l;
  }
  EXPECT_FALSE(IsLogLevel("verbose"));
  EXPECT_FALSE(IsLogLevel(""));
}

class ParseCommandLineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/slabfs_options_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The -o options in a libfuse argument vector, one per entry ("ro",
  // "fsname=/x"), split at unescaped commas; libfuse merges them into one
  // "-o a,b,c".
  static std::vector<std::string> MountOptions(const std::vector<std::string>& args) {
    std::vector<std::string> out;
    for (size_t i = 0; i < args.size(); ++i) {
      std::string list;
      if (args[i] == "-o" && i + 1 < args.size())
        list = args[++i];
      else if (args[i].starts_with("-o"))
        list = args[i].substr(2);
      else
        continue;
      std::string cur;
      for (size_t j = 0; j < list.size(); ++j) {
        if (list[j] == '\\' && j + 1 < list.size()) {
          cur += list[j];
          cur += list[++j];
        } else if (list[j] == ',') {
          out.push_back(cur);
          cur.clear();
        } else {
          cur += list[j];
        }
      }
      out.push_back(cur);
    }
    return out;
  }
  static bool Has(const std::vector<std::string>& args, const std::string& opt) {
    auto v = MountOptions(args);
    return std::find(v.begin(), v.end(), opt) != v.end();
  }
  static bool HasPrefix(const std::vector<std::string>& args, const std::string& p) {
    auto v = MountOptions(args);
    return std::any_of(v.begin(), v.end(), [&](const std::string& s) { return s.starts_with(p); });
  }
  static bool HasArg(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  }

  std::string dir_;
};

TEST_F(ParseCommandLineTest, TakesContainerAndMountpointWithDefaults) {
  auto cfg = ParseCommandLine({"slabfs", "/data/x.slab", dir_});
  ASSERT_TRUE(cfg.has_value()) << cfg.error().ToString();
  EXPECT_EQ(cfg->container, "/data/x.slab");
  EXPECT_EQ(cfg->mountpoint, std::filesystem::canonical(dir_).string());
  EXPECT_FALSE(cfg->read_only);
  EXPECT_FALSE(cfg->foreground);
  EXPECT_FALSE(cfg->single_thread);
  EXPECT_EQ(cfg->cache_bytes, kDefaultCacheBytes);
  EXPECT_EQ(cfg->commit_interval, kDefaultCommitInterval);
  EXPECT_EQ(cfg->log_level, "info");
  ASSERT_FALSE(cfg->fuse_args.empty());
  EXPECT_EQ(cfg->fuse_args[0], "slabfs");
  EXPECT_TRUE(Has(cfg->fuse_args, "fsname=/data/x.slab"));
  EXPECT_TRUE(Has(cfg->fuse_args, "subtype=slabfs"));
  EXPECT_TRUE(Has(cfg->fuse_args, "default_permissions"));
  // The positional arguments are consumed.
  EXPECT_FALSE(HasArg(cfg->fuse_args, "/data/x.slab"));
  EXPECT_FALSE(HasArg(cfg->fuse_args, dir_));
}

TEST_F(ParseCommandLineTest, MakesARelativeContainerPathAbsolute) {
  auto cfg = ParseCommandLine({"slabfs", "rel/x.slab", dir_});
  ASSERT_TRUE(cfg.has_value()) << cfg.error().ToString();
  EXPECT_EQ(cfg->container, (std::filesystem::current_path() / "rel/x.slab").string());
}

TEST_F(ParseCommandLineTest, ReadsSlabfsOptionsAndConsumesThem) {
  auto cfg = ParseCommandLine(
      {"slabfs", "x.slab", dir_, "-f", "-s", "-o", "ro,cache_size=256M,commit_interval=0.5,log_level=debug"});
  ASSERT_TRUE(cfg.has_value()) << cfg.error().ToString();
  EXPECT_TRUE(cfg->foreground);
  EXPECT_TRUE(cfg->single_thread);
  EXPECT_TRUE(cfg->read_only);
  EXPECT_EQ(cfg->cache_bytes, 256ull << 20);
  EXPECT_EQ(cfg->commit_interval, milliseconds(500));
  EXPECT_EQ(cfg->log_level, "debug");
  EXPECT_FALSE(HasPrefix(cfg->fuse_args, "cache_size"));
  EXPECT_FALSE(HasPrefix(cfg->fuse_args, "commit_interval"));
  EXPECT_FALSE(HasPrefix(cfg->fuse_args, "log_level"));
  // ro also reaches the kernel.
  EXPECT_TRUE(Has(cfg->fuse_args, "ro"));
}

TEST_F(ParseCommandLineTest, ReadsLogFileAndNonemptyAndConsumesThem) {
  auto cfg = ParseCommandLine({"slabfs", "x.slab", dir_, "-o", "log_file=logs/slabfs.log,nonempty"});
  ASSERT_TRUE(cfg.has_value()) << cfg.error().ToString();
  // Absolute: the daemon changes directory to / when it detaches.
  EXPECT_EQ(cfg->log_file, (std::filesystem::current_path() / "logs/slabfs.log").string());
  EXPECT_TRUE(cfg->allow_nonempty);
  EXPECT_FALSE(HasPrefix(cfg->fuse_args, "log_file"));
  // libfuse 3 does not know nonempty and would refuse it.
  EXPECT_FALSE(Has(cfg->fuse_args, "nonempty"));
  EXPECT_TRUE(CheckFuseOptions(*cfg).ok()) << CheckFuseOptions(*cfg).ToString();

  auto plain = ParseCommandLine({"slabfs", "x.slab", dir_});
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->log_file, "");
  EXPECT_FALSE(plain->allow_nonempty);
  auto empty = ParseCommandLine({"slabfs", "x.slab", dir_, "-o", "log_file="});
  ASSERT_FALSE(empty.has_value());
  EXPECT_NE(empty.error().message().find("log_file"), std::string::npos);
}

TEST_F(ParseCommandLineTest, ReadsFollowAndReuseDelay) {
  auto cfg = ParseCommandLine({"slabfs", "x.slab", dir_, "-o", "ro,follow"});
  ASSERT_TRUE(cfg.has_value()) << cfg.error().ToString();
  EXPECT_EQ(cfg->follow_interval, kDefaultFollowInterval);
  EXPECT_EQ(cfg->reuse_delay_seconds, -1);
  EXPECT_FALSE(HasPrefix(cfg->fuse_args, "follow"));
  cfg = ParseCommandLine({"slabfs", "x.slab", dir_, "-o", "ro,follow=0.25,reuse_delay=30"});
  ASSERT_TRUE(cfg.has_value()) << cfg.error().ToString();
  EXPECT_EQ(cfg->follow_interval, milliseconds(250));
  EXPECT_EQ(cfg->reuse_delay_seconds, 30);
  EXPECT_FALSE(HasPrefix(cfg->fuse_args, "reuse_delay"));
  // Tiny intervals are raised to 10 ms; 0 turns following off.
  cfg = ParseCommandLine({"slabfs", "x.slab", dir_, "-o", "ro,follow=0.001"});
  ASSERT_TRUE(cfg.has_value());
  EXPECT_EQ(cfg->follow_interval, milliseconds(10));
  cfg = ParseCommandLine({"slabfs", "x.slab", dir_, "-o", "follow=0"});
  ASSERT_TRUE(cfg.has_value()) << "follow=0 is off, so rw is fine";
  EXPECT_EQ(cfg->follow_interval, milliseconds(0));
}

TEST_F(ParseCommandLineTest, NospliceTurnsSplicedRepliesOff) {
  auto cfg = ParseCommandLine({"slabfs", "x.slab", dir_});
  ASSERT_TRUE(cfg.has_value()) << cfg.error().ToString();
  EXPECT_TRUE(cfg->splice_reads);
  cfg = ParseCommandLine({"slabfs", "x.slab", dir_, "-o", "ro,nosplice"});
  ASSERT_TRUE(cfg.has_value()) << cfg.error().ToString();
  EXPECT_FALSE(cfg->splice_reads);
  EXPECT_FALSE(Has(cfg->fuse_args, "nosplice"));
}

TEST_F(ParseCommandLineTest, RefusesFollowOnAReadWriteMountAndBadValues) {
  for (const char* opts : {"follow", "rw,follow=2", "follow,rw"}) {
    auto cfg = ParseCommandLine({"slabfs", "x.slab", dir_, "-o", opts});
    ASSERT_FALSE(cfg.has_value()) << opts;
    EXPECT_NE(cfg.error().message().find("follow needs ro"), std::string::npos) << cfg.error().message();
  }
  for (const char* opts : {"ro,follow=x", "ro,follow=-1", "reuse_delay=", "reuse_delay=1y"}) {
    auto cfg = ParseCommandLine({"slabfs", "x.slab", dir_, "-o", opts});
    EXPECT_FALSE(cfg.has_value()) << opts;
  }
}

TEST_F(ParseCommandLineTest, AcceptsOptionsBeforeThePositionals) {
  auto cfg = ParseCommandLine({"slabfs", "-f", "-o", "ro", "x.slab", dir_});
  ASSERT_TRUE(cfg.has_value()) << cfg.error().ToString();
  EXPECT_TRUE(cfg->foreground);
  EXPECT_TRUE(cfg->read_only);
  EXPECT_TRUE(cfg->container.ends_with("/x.slab"));
}

TEST_F(ParseCommandLineTest, DebugImpliesForeground) {
  auto cfg = ParseCommandLine({"slabfs", "x.slab", dir_, "-d"});
  ASSERT_TRUE(cfg.has_value()) << cfg.error().ToString();
  EXPECT_TRUE(cfg->debug);
  EXPECT_TRUE(cfg->foreground);
}

TEST_F(ParseCommandLineTest, PassesOtherOptionsToLibfuse) {
  auto cfg = ParseCommandLine({"slabfs", "x.slab", dir_, "-o", "allow_other,max_read=131072"});
  ASSERT_TRUE(cfg.has_value()) << cfg.error().ToString();
  EXPECT_TRUE(Has(cfg->fuse_args, "allow_other")) << ::testing::PrintToString(cfg->fuse_args);
  EXPECT_TRUE(Has(cfg->fuse_args, "max_read=131072"));
}

TEST_F(ParseCommandLineTest, DropsTheWordsOfFstabAndSystemd) {
  auto cfg = ParseCommandLine({"slabfs", "x.slab", dir_, "-o",
                               "defaults,noauto,auto,user,nouser,users,owner,group,nofail,_netdev,comment=a b,"
                               "x-systemd.automount,x-gvfs-show,cache_size=8M,allow_other"});
  ASSERT_TRUE(cfg.has_value()) << cfg.error().ToString();
  EXPECT_EQ(cfg->cache_bytes, 8u << 20);
  EXPECT_TRUE(Has(cfg->fuse_args, "allow_other"));
  for (const char* word : {"defaults", "noauto", "auto", "user", "nouser", "users", "owner", "group", "nofail",
                           "_netdev", "x-systemd.automount", "x-gvfs-show"}) {
    EXPECT_FALSE(Has(cfg->fuse_args, word)) << word;
  }
  EXPECT_FALSE(HasPrefix(cfg->fuse_args, "comment="));
  EXPECT_TRUE(CheckFuseOptions(*cfg).ok()) << CheckFuseOptions(*cfg).ToString();
}

TEST_F(ParseCommandLineTest, CacheMaxLetsTheCacheGrow) {
  auto cfg = ParseCommandLine({"slabfs", "x.slab", dir_, "-o", "cache_size=16M,cache_max=1G"});
  ASSERT_TRUE(cfg.has_value()) << cfg.error().ToString();
  EXPECT_EQ(cfg->cache_bytes, 16u << 20);
  EXPECT_EQ(cfg->cache_max_bytes, 1u << 30);
  EXPECT_FALSE(HasPrefix(cfg->fuse_args, "cache_max"));
  auto dflt = ParseCommandLine({"slabfs", "x.slab", dir_});
  ASSERT_TRUE(dflt.has_value());
  EXPECT_EQ(dflt->cache_max_bytes, 0u);
  auto bad = ParseCommandLine({"slabfs", "x.slab", dir_, "-o", "cache_max=lots"});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("cache_max"), std::string::npos);
}

TEST_F(ParseCommandLineTest, CheckFuseOptionsNamesAnOptionLibfuseDoesNotKnow) {
  auto cfg = ParseCommandLine({"slabfs", "x.slab", dir_, "-o", "allow_other,frobnicate=3"});
  ASSERT_TRUE(cfg.has_value()) << cfg.error().ToString();
  Status s = CheckFuseOptions(*cfg);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("frobnicate"), std::string::npos) << s.message();
}

TEST(UsageTest, ListsEveryOption) {
  const std::string u = Usage("slabfs");
  for (const char* opt :
       {"-o ro", "-o rw", "-o cache_size=SIZE", "-o cache_max=SIZE", "-o commit_interval=S", "-o follow[=S]",
        "-o reuse_delay=S", "-o log_level=LEVEL", "-o log_file=PATH", "-o nonempty", "noauto", "nofail", "x-*"}) {
    EXPECT_NE(u.find(opt), std::string::npos) << opt;
  }
}

TEST(UsageTest, SaysWhereTheLogGoes) {
  const std::string u = Usage("slabfs");
  for (const char* words : {"stderr", "syslog", "journalctl", "user.slab.last_error"}) {
    EXPECT_NE(u.find(words), std::string::npos) << words;
  }
}

TEST_F(ParseCommandLineTest, KeepsTheUsersFsname) {
  auto cfg = ParseCommandLine({"slabfs", "x.slab", dir_, "-o", "fsname=mine"});
  ASSERT_TRUE(cfg.has_value()) << cfg.error().ToString();
  EXPECT_FALSE(HasPrefix(cfg->fuse_args, "fsname=/"));
}

TEST_F(ParseCommandLineTest, EscapesCommasInTheFsname) {
  auto cfg = ParseCommandLine({"slabfs", "/d/a,b.slab", dir_});
  ASSERT_TRUE(cfg.has_value()) << cfg.error().ToString();
  EXPECT_TRUE(Has(cfg->fuse_args, "fsname=/d/a\\,b.slab")) << ::testing::PrintToString(cfg->fuse_args);
}

TEST_F(ParseCommandLineTest, RejectsBadValuesWithTheOptionName) {
  auto size = ParseCommandLine({"slabfs", "x.slab", dir_, "-o", "cache_size=lots"});
  ASSERT_FALSE(size.has_value());
  EXPECT_NE(size.error().message().find("cache_size"), std::string::npos);
  auto interval = ParseCommandLine({"slabfs", "x.slab", dir_, "-o", "commit_interval=-3"});
  ASSERT_FALSE(interval.has_value());
  EXPECT_NE(interval.error().message().find("commit_interval"), std::string::npos);
  auto level = ParseCommandLine({"slabfs", "x.slab", dir_, "-o", "log_level=chatty"});
  ASSERT_FALSE(level.has_value());
  EXPECT_NE(level.error().message().find("log_level"), std::string::npos);
}

TEST_F(ParseCommandLineTest, RejectsMissingArguments) {
  auto none = ParseCommandLine({"slabfs"});
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code(), Code::kInvalidArgument);
  auto no_mountpoint = ParseCommandLine({"slabfs", "x.slab"});
  ASSERT_FALSE(no_mountpoint.has_value());
  EXPECT_NE(no_mountpoint.error().message().find("MOUNTPOINT"), std::string::npos);
}

TEST_F(ParseCommandLineTest, RejectsAMissingMountpointDirectory) {
  auto cfg = ParseCommandLine({"slabfs", "x.slab", dir_ + "/nope"});
  ASSERT_FALSE(cfg.has_value());
  EXPECT_NE(cfg.error().message().find("nope"), std::string::npos) << cfg.error().message();
}

TEST_F(ParseCommandLineTest, RejectsAThirdPositional) {
  EXPECT_FALSE(ParseCommandLine({"slabfs", "x.slab", dir_, "extra"}).has_value());
}

TEST_F(ParseCommandLineTest, HelpNeedsNoOtherArguments) {
  auto cfg = ParseCommandLine({"slabfs", "--help"});
  ASSERT_TRUE(cfg.has_value()) << cfg.error().ToString();
  EXPECT_TRUE(cfg->show_help);
  auto version = ParseCommandLine({"slabfs", "-V"});
  ASSERT_TRUE(version.has_value());
  EXPECT_TRUE(version->show_version);
}

}  // namespace
}  // namespace slabfs::fusefs
