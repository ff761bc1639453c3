// The limits the loader enforces are enforced by every writer
// (engine/format/limits.h): no sequence of accepted calls makes a container
// that does not open. Each limit is pushed to its edge through the API,
// the call past it is refused with the container unchanged, and the
// container reopens read-write and read-only.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "engine/format/limits.h"
#include "slabfs/container.h"
#include "tests/testutil/mem_container.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs {
namespace {

using testutil::NewDisk;
using testutil::OpenOnDisk;

std::string Nested(int levels, const std::string& name = "g") {
  std::string p;
  for (int i = 0; i < levels; ++i) p += "/" + name;
  return p;
}

void ExpectOpens(const std::shared_ptr<testutil::Disk>& disk) {
  {
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
    ASSERT_OK(c->Close());
  }
  ASSERT_OK_AND_ASSIGN(auto r, OpenOnDisk(disk, {.read_only = true}));
}

TEST(LimitsTest, GroupsAndDatasetsNestAtMostMaxDepth) {
  auto disk = NewDisk();
  {
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
    ASSERT_OK(c->MakeGroups(Nested(engine::kMaxDepth), true));
    ASSERT_OK_AND_ASSIGN(ObjectId deepest, c->Resolve(Nested(engine::kMaxDepth)));
    auto g = c->CreateGroup(deepest, "g");
    ASSERT_FALSE(g.has_value());
    EXPECT_EQ(g.error().code(), Code::kInvalidArgument);
    EXPECT_NE(g.error().message().find("nested at most 512"), std::string::npos) << g.error().ToString();
    auto d = c->CreateDataset(Nested(engine::kMaxDepth) + "/d", {.dtype = DType::kU1, .shape = {4}});
    ASSERT_FALSE(d.has_value());
    EXPECT_EQ(d.error().code(), Code::kInvalidArgument);
    // MakeGroups with parents stops at the limit too, creating nothing past it.
    EXPECT_EQ(c->MakeGroups(Nested(engine::kMaxDepth + 5), true).error().code(), Code::kInvalidArgument);
    ASSERT_OK(c->Commit());
  }
  ExpectOpens(disk);
}

TEST(LimitsTest, RenameMayNotMakeTheTreeDeeperThanMaxDepth) {
  auto disk = NewDisk();
  {
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
    ASSERT_OK(c->MakeGroups(Nested(engine::kMaxDepth - 2), true));
    ASSERT_OK(c->MakeGroups("/t/u/v", true));  // three levels tall
    ASSERT_OK_AND_ASSIGN(ObjectId deep, c->Resolve(Nested(engine::kMaxDepth - 2)));
    // Under depth 510, /t would reach 513: refused, nothing moves.
    Status s = c->Rename(kRootId, "t", deep, "t");
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
    EXPECT_TRUE(c->Resolve("/t/u/v").has_value());
    // One level higher it reaches exactly 512: allowed.
    ASSERT_OK_AND_ASSIGN(ObjectId higher, c->Resolve(Nested(engine::kMaxDepth - 3)));
    ASSERT_OK(c->Rename(kRootId, "t", higher, "t"));
    ASSERT_OK(c->Commit());
  }
  ExpectOpens(disk);
}

TEST(LimitsTest, ARefusedRenameOverATargetKeepsTheTarget) {
  // The checks come before the target is detached.
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  ASSERT_OK(c->MakeGroups(Nested(engine::kMaxDepth - 1), true));
  ASSERT_OK_AND_ASSIGN(ObjectId deep, c->Resolve(Nested(engine::kMaxDepth - 1)));
  ASSERT_TRUE(c->CreateGroup(deep, "t").has_value());
  ASSERT_OK(c->MakeGroups("/t/u", true));
  EXPECT_EQ(c->Rename(kRootId, "t", deep, "t").code(), Code::kInvalidArgument);
  EXPECT_TRUE(c->Resolve(Nested(engine::kMaxDepth - 1) + "/t").has_value());
  EXPECT_TRUE(c->Resolve("/t/u").has_value());
}

TEST(LimitsTest, AttributesPerObjectAreCounted) {
  auto disk = NewDisk();
  {
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
    // Names in sorted order (each goes at the end of the object's list).
    char name[16];
    for (size_t i = 0; i < engine::kMaxAttributesPerObject; ++i) {
      std::snprintf(name, sizeof name, "a%06zu", i);
      ASSERT_OK(c->SetAttribute(kRootId, name, Attribute::String("")));
    }
    Status s = c->SetAttribute(kRootId, "one-more", Attribute::String(""));
    EXPECT_EQ(s.code(), Code::kNoSpace) << s.ToString();
    // Replacing an existing one is still fine.
    ASSERT_OK(c->SetAttribute(kRootId, "a000007", Attribute::String("x")));
    ASSERT_OK(c->Commit());
  }
  ExpectOpens(disk);
}

TEST(LimitsTest, AttributeBytesPerObjectCountEachAttributeOnce) {
  auto disk = NewDisk();
  {
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
    const std::string big(engine::kMaxAttributeBytesPerObject / 16 - 8, 'v');
    // Replacing one attribute again and again never adds up.
    for (int i = 0; i < 40; ++i) ASSERT_OK(c->SetAttribute(kRootId, "same", Attribute::String(big)));
    for (int i = 0; i < 15; ++i) ASSERT_OK(c->SetAttribute(kRootId, "b" + std::to_string(i), Attribute::String(big)));
    // Sixteen of them and their names leave too little room for a 17th.
    EXPECT_CODE(c->SetAttribute(kRootId, "one-more", Attribute::String(big)), Code::kNoSpace);
    // Deleting one makes room again.
    ASSERT_OK(c->DeleteAttribute(kRootId, "b3"));
    ASSERT_OK(c->SetAttribute(kRootId, "one-more", Attribute::String(big)));
    EXPECT_CODE(c->DeleteAttribute(kRootId, "b3"), Code::kNotFound);
    ASSERT_OK(c->Commit());
  }
  ExpectOpens(disk);
  // After a reopen the count is the same: still no room for another.
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  EXPECT_CODE(c->SetAttribute(kRootId, "again", Attribute::String(std::string(engine::kMaxAttributeBytesPerObject / 16, 'w'))),
              Code::kNoSpace);
}

}  // namespace
}  // namespace slabfs
