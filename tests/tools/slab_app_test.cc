// What `slab` says about a command it does not know.
#include "tools/slab_app.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace slabfs::tools {
namespace {

const std::vector<std::string> kCommands = {"create", "mkgroup", "mkdset", "ls", "info", "export"};

TEST(UnknownCommandTest, NamesTheWordAndGivesAHint) {
  std::string m = UnknownCommandMessage("frobnicate", kCommands);
  EXPECT_EQ(m, "slab: unknown command 'frobnicate'\nRun 'slab --help' for the list of commands.\n");
}

TEST(UnknownCommandTest, SuggestsANearMiss) {
  EXPECT_NE(UnknownCommandMessage("lst", kCommands).find("(did you mean 'ls'?)"), std::string::npos);
  EXPECT_NE(UnknownCommandMessage("infos", kCommands).find("(did you mean 'info'?)"), std::string::npos);
  EXPECT_NE(UnknownCommandMessage("mkdst", kCommands).find("did you mean 'mkdset'"), std::string::npos);
  EXPECT_EQ(UnknownCommandMessage("upload", kCommands).find("did you mean"), std::string::npos);
}

}  // namespace
}  // namespace slabfs::tools
