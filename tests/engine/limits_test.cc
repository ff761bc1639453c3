// The limits the loader enforces are enforced by every writer
// (engine/format/limits.h): no sequence of accepted calls makes a container
// that does not open. Each limit is pushed to its edge through the API,
// the call past it is refused with the container unchanged, and the
// container reopens read-write and read-only.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "engine/format/block.h"
#include "engine/format/layout.h"
#include "engine/format/limits.h"
#include "engine/format/object.h"
#include "engine/format/superblock.h"
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
  EXPECT_CODE(
      c->SetAttribute(kRootId, "again", Attribute::String(std::string(engine::kMaxAttributeBytesPerObject / 16, 'w'))),
      Code::kNoSpace);
}

// A container nested deeper than the loader accepts (only an older build
// could make one, a thousand nested mkdirs deep): built here block by
// block. A reader serves everything but what lies past the loader's depth;
// a writer refuses it with a message that names the way out.
TEST(LimitsTest, AReaderOfATooDeepContainerServesWhatLiesAboveTheLimit) {
  auto disk = NewDisk();
  {
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
    ASSERT_OK(c->MakeGroups("/kept"));
    ASSERT_OK(c->Commit());
  }
  engine::Superblock sb;
  {
    std::lock_guard lock(disk->mu);
    for (uint64_t slot : {engine::kSuperblockSlot0, engine::kSuperblockSlot1}) {
      auto got = engine::DecodeSuperblock(std::string_view(disk->current).substr(slot, engine::kSuperblockSlotBytes));
      if (got && got->generation > sb.generation) sb = *got;
    }
    // A chain of groups "g" below /deep, deepest first, appended at the end.
    const int levels = engine::kLoadMaxDepth + 5;
    uint64_t at = disk->current.size();
    ObjectId id = sb.next_object_id + levels;
    engine::BlockRef below{};
    auto append = [&](const engine::ObjectRecord& rec) {
      const std::string block = engine::EncodeBlock(engine::BlockTypeOf(rec.kind), engine::EncodeObject(rec));
      disk->current.append(block);
      engine::BlockRef ref{at, static_cast<uint32_t>(block.size())};
      at += block.size();
      return ref;
    };
    for (int level = levels; level >= 1; --level, --id) {
      engine::ObjectRecord rec;
      rec.id = id;
      rec.kind = ObjectKind::kGroup;
      if (below.addr != 0) rec.children.push_back({"g", ObjectKind::kGroup, id + 1, below});
      below = append(rec);
    }
    // The new root: /kept (its old block) and /deep, the top of the chain.
    engine::ObjectRecord root;
    root.id = kRootId;
    root.kind = ObjectKind::kGroup;
    auto old_root = engine::DecodeObject(
        std::string_view(disk->current)
            .substr(sb.root.addr + engine::kBlockHeaderBytes, sb.root.len - engine::kBlockHeaderBytes),
        engine::BlockType::kGroup, sb.file_end);
    ASSERT_TRUE(old_root.has_value()) << old_root.error().ToString();
    root.children.push_back({"deep", ObjectKind::kGroup, id + 1, below});
    for (const auto& child : old_root->children) root.children.push_back(child);
    std::sort(root.children.begin(), root.children.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    sb.root = append(root);
    sb.generation += 1;
    sb.file_end = at;
    sb.next_object_id += levels + 1;
    sb.free_list = {};
    const std::string enc = engine::EncodeSuperblock(sb);
    disk->current.replace(sb.generation % 2 ? engine::kSuperblockSlot1 : engine::kSuperblockSlot0, enc.size(), enc);
    disk->durable = disk->current;
  }
  {
    ASSERT_OK_AND_ASSIGN(auto r, OpenOnDisk(disk, {.read_only = true}));
    EXPECT_TRUE(r->Resolve("/kept").has_value());
    std::string path = "/deep";
    for (int i = 1; i < engine::kLoadMaxDepth; ++i) path += "/g";
    EXPECT_TRUE(r->Resolve(path).has_value()) << "every level the loader accepts";
    EXPECT_FALSE(r->Resolve(path + "/g").has_value()) << "and nothing below it";
  }
  auto w = OpenOnDisk(disk);
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error().code(), Code::kCorruption);
  EXPECT_NE(w.error().message().find("read-only"), std::string::npos) << w.error().ToString();
}

}  // namespace
}  // namespace slabfs
