#include "tools/byte_stream.h"

#include <fstream>
#include <sstream>
#include <string>

#include <sys/stat.h>

#include <gtest/gtest.h>
#include <boost/filesystem.hpp>

namespace slabfs::tools {
namespace {
namespace fs = boost::filesystem;

class ByteStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fs::unique_path("slab-bytestream-%%%%-%%%%");
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  static std::string Slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

  // Files in the directory, to see that no temporary file is left behind.
  size_t CountFiles() const {
    size_t n = 0;
    for (auto it = fs::directory_iterator(dir_); it != fs::directory_iterator(); ++it) ++n;
    return n;
  }

  fs::path dir_;
};

TEST_F(ByteStreamTest, ReadsWholeFileAndKnowsItsSize) {
  std::ofstream(Path("in.bin"), std::ios::binary) << "hello world";
  auto in = InputFile::Open(Path("in.bin"));
  ASSERT_TRUE(in.has_value()) << in.error().ToString();
  ASSERT_TRUE(in->size().has_value());
  EXPECT_EQ(*in->size(), 11u);
  char buf[32] = {};
  auto got = in->ReadFull(buf, 5);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, 5u);
  EXPECT_EQ(std::string(buf, 5), "hello");
  got = in->ReadFull(buf, sizeof(buf));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, 6u);
  got = in->ReadFull(buf, sizeof(buf));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, 0u);
}

TEST_F(ByteStreamTest, MissingInputIsNotFound) {
  auto in = InputFile::Open(Path("nope.bin"));
  ASSERT_FALSE(in.has_value());
  EXPECT_EQ(in.error().code(), Code::kNotFound);
  EXPECT_NE(in.error().message().find("nope.bin"), std::string::npos);
}

TEST_F(ByteStreamTest, DirectoryInputIsInvalid) {
  auto in = InputFile::Open(dir_.string());
  ASSERT_FALSE(in.has_value());
  EXPECT_EQ(in.error().code(), Code::kInvalidArgument);
}

TEST_F(ByteStreamTest, OutputAppearsOnlyAfterFinish) {
  std::string path = Path("out.bin");
  auto out = OutputFile::Create(path);
  ASSERT_TRUE(out.has_value()) << out.error().ToString();
  ASSERT_TRUE(out->Write("abc", 3).ok());
  EXPECT_FALSE(fs::exists(path));
  ASSERT_TRUE(out->Finish().ok());
  EXPECT_EQ(Slurp(path), "abc");
  EXPECT_EQ(CountFiles(), 1u);
}

TEST_F(ByteStreamTest, UnfinishedOutputLeavesNothingBehind) {
  std::string path = Path("out.bin");
  std::ofstream(path, std::ios::binary) << "old contents";
  {
    auto out = OutputFile::Create(path);
    ASSERT_TRUE(out.has_value());
    ASSERT_TRUE(out->Write("new", 3).ok());
  }
  EXPECT_EQ(Slurp(path), "old contents");
  EXPECT_EQ(CountFiles(), 1u);
}

TEST_F(ByteStreamTest, ReplacingKeepsTheFileMode) {
  std::string path = Path("out.bin");
  std::ofstream(path, std::ios::binary) << "old";
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  auto out = OutputFile::Create(path);
  ASSERT_TRUE(out.has_value());
  ASSERT_TRUE(out->Write("new", 3).ok());
  ASSERT_TRUE(out->Finish().ok());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(Slurp(path), "new");
}

TEST_F(ByteStreamTest, OutputIntoMissingDirectoryFails) {
  auto out = OutputFile::Create(Path("no/such/dir/out.bin"));
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().code(), Code::kNotFound);
}

TEST_F(ByteStreamTest, OutputOntoDirectoryFails) {
  auto out = OutputFile::Create(dir_.string());
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().code(), Code::kInvalidArgument);
}

TEST_F(ByteStreamTest, WritesThroughSpecialFiles) {
  auto out = OutputFile::Create("/dev/null");
  ASSERT_TRUE(out.has_value()) << out.error().ToString();
  ASSERT_TRUE(out->Write("abc", 3).ok());
  ASSERT_TRUE(out->Finish().ok());
  EXPECT_TRUE(fs::exists("/dev/null"));
}

TEST_F(ByteStreamTest, RecognisesTheSameFile) {
  std::ofstream(Path("a"), std::ios::binary) << "x";
  fs::create_symlink(Path("a"), Path("link"));
  EXPECT_TRUE(IsSameFile(Path("a"), Path("link")));
  EXPECT_TRUE(IsSameFile(Path("a"), (dir_ / "." / "a").string()));
  EXPECT_FALSE(IsSameFile(Path("a"), Path("missing")));
  EXPECT_FALSE(IsSameFile(Path("missing"), Path("missing")));
}

}  // namespace
}  // namespace slabfs::tools
