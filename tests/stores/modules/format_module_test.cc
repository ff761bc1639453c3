// LoadFormatModule refuses, by name and with the reason, every module it
// cannot use: a missing file, a missing entry, a module from another build,
// an entry without a table; answers the same way again without loading
// twice; and uses an entry of this build. (The real modules
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

// Entries of tests/stores/modules/test_module.cc, each refused with its reason.
TEST(FormatModuleTest, EntriesItCannotUseAreRefusedWithTheirReason) {
  const struct {
    const char* entry;
    std::string want;
  } cases[] = {
      {"slabfs_test_missing_entry", "has no entry slabfs_test_missing_entry"},
      {"slabfs_test_other_build", "is from another build of slabfs (0.0.0-another-build"},
      {"slabfs_test_no_table", "gives no table from slabfs_test_no_table"},
  };
  for (const auto& c : cases) {
    auto m = LoadFormatModule("test-module", c.entry);
    ASSERT_FALSE(m.has_value()) << c.entry;
    EXPECT_EQ(m.error().code(), Code::kNotSupported) << c.entry;
    EXPECT_NE(m.error().message().find(c.want), std::string::npos) << m.error().message();
  }
}

// The same module's entry of this build is used, after the refusals above
// (which leave the module loaded) and however often it is asked for.
TEST(FormatModuleTest, AnEntryOfThisBuildIsUsed) {
  for (int i = 0; i < 2; ++i) {
    auto m = LoadFormatModule("test-module", "slabfs_test_this_build");
    ASSERT_TRUE(m.has_value()) << m.error().message();
    auto again = LoadFormatModule("test-module", "slabfs_test_this_build");
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(*m, *again);
  }
}

}  // namespace
}  // namespace slabfs::stores
