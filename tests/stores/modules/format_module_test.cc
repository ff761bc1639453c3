// LoadFormatModule refuses, by name and with the reason, every module it
// cannot use: a missing file, a missing entry, a module from another build,
// and answers the same way again without loading twice. (The real modules
// are loaded by slab and slabfs: tests/integration/test_format_modules.py.)
#include "stores/modules/format_module.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace slabfs::stores {
namespace {

TEST(FormatModuleTest, TheDirectoryIsBesideTheProgram) {
  const std::filesystem::path dir = FormatModuleDir();
  EXPECT_EQ(dir.filename(), "slabfs");
  EXPECT_EQ(dir.parent_path().filename(), "lib");
  EXPECT_TRUE(std::filesystem::exists(dir / "slabfs-test-module.so")) << dir;
}

TEST(FormatModuleTest, AMissingModuleIsNamed) {
  for (int i = 0; i < 2; ++i) {  // the second answer comes from the first
    auto m = LoadFormatModule("no-such-format", "slabfs_no_such_entry");
    ASSERT_FALSE(m.has_value());
    EXPECT_EQ(m.error().code(), Code::kNotSupported);
    EXPECT_NE(m.error().message().find(FormatModuleDir() + "/slabfs-no-such-format.so"), std::string::npos)
        << m.error().message();
    EXPECT_NE(m.error().message().find("cannot be read"), std::string::npos) << m.error().message();
  }
}

TEST(FormatModuleTest, AModuleWithoutTheEntryIsRefused) {
  auto m = LoadFormatModule("test-module", "slabfs_test_missing_entry");
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().code(), Code::kNotSupported);
  EXPECT_NE(m.error().message().find("has no entry slabfs_test_missing_entry"), std::string::npos)
      << m.error().message();
}

TEST(FormatModuleTest, AModuleFromAnotherBuildIsNeverUsed) {
  auto m = LoadFormatModule("test-module", "slabfs_test_other_build");
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().code(), Code::kNotSupported);
  EXPECT_NE(m.error().message().find("is from another build of slabfs (0.0.0-another-build"), std::string::npos)
      << m.error().message();
}

TEST(FormatModuleTest, AnEntryWithoutATableIsRefused) {
  auto m = LoadFormatModule("test-module", "slabfs_test_no_table");
  ASSERT_FALSE(m.has_value());
  EXPECT_NE(m.error().message().find("gives no table from slabfs_test_no_table"), std::string::npos)
      << m.error().message();
}

}  // namespace
}  // namespace slabfs::stores
