// Groups with many children (engine/txn/group_pages.h): the page format and
// its hostile inputs; a change to one entry of a big group writes one page
// and the table; random inserts, removals and renames keep every name
// through commits and reopens (fsck clean); a group goes back inline when
// it shrinks; and a crash at any write of a commit leaves the old or the new
// listing.
#include "engine/txn/group_pages.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/format/layout.h"
#include "engine/fsck/check_file.h"
#include "tests/testutil/mem_container.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs {
namespace {

using engine::ChildPageRef;
using engine::ChildRecord;
using testutil::NewDisk;
using testutil::OpenOnDisk;

constexpr uint64_t kEnd = engine::kDataStart + (1 << 20);

std::vector<ChildRecord> Entries() {
  return {{"alpha", ObjectKind::kDataset, 5, {engine::kDataStart, 64}},
          {"beta", ObjectKind::kGroup, 6, {engine::kDataStart + 64, 64}},
          {"gamma", ObjectKind::kDataset, 7, {engine::kDataStart + 128, 64}}};
}

TEST(GroupPageFormatTest, RoundTripsAndRejectsHostilePages) {
  const auto e = Entries();
  const std::string page = engine::EncodeGroupPage(9, e.data(), e.size());
  const std::string next = "zeta";
  ASSERT_OK_AND_ASSIGN(auto back, engine::DecodeGroupPage(page, 9, ChildPageRef{"", {}, 3}, &next, kEnd));
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[1].name, "beta");
  EXPECT_EQ(back[2].block, e[2].block);
  // Another group's page, a count the table does not say, entries outside
  // the page's range, truncation at every length.
  EXPECT_CODE(engine::DecodeGroupPage(page, 8, ChildPageRef{"", {}, 3}, &next, kEnd), Code::kCorruption);
  EXPECT_CODE(engine::DecodeGroupPage(page, 9, ChildPageRef{"", {}, 2}, &next, kEnd), Code::kCorruption);
  EXPECT_CODE(engine::DecodeGroupPage(page, 9, ChildPageRef{"b", {}, 3}, &next, kEnd), Code::kCorruption);
  const std::string low = "gam";
  EXPECT_CODE(engine::DecodeGroupPage(page, 9, ChildPageRef{"", {}, 3}, &low, kEnd), Code::kCorruption);
  for (size_t n = 0; n < page.size(); ++n)
    EXPECT_FALSE(engine::DecodeGroupPage(page.substr(0, n), 9, ChildPageRef{"", {}, 3}, &next, kEnd).has_value());
  // Out of order.
  std::vector<ChildRecord> swapped = {e[1], e[0]};
  const std::string bad = engine::EncodeGroupPage(9, swapped.data(), swapped.size());
  EXPECT_CODE(engine::DecodeGroupPage(bad, 9, ChildPageRef{"", {}, 2}, nullptr, kEnd), Code::kCorruption);
}

TEST(GroupPageFormatTest, TableRoundTripsAndRejectsBadKeys) {
  engine::ObjectRecord g;
  g.id = 9;
  g.kind = ObjectKind::kGroup;
  g.child_pages = {{"", {engine::kDataStart, 64}, 3}, {"m", {engine::kDataStart + 64, 64}, 1}};
  EXPECT_EQ(engine::ObjectBlockVersion(g), 2);
  const std::string payload = engine::EncodeObject(g);
  ASSERT_OK_AND_ASSIGN(auto back, engine::DecodeObject(payload, engine::BlockType::kGroup, kEnd, 2));
  EXPECT_EQ(back.child_pages, g.child_pages);
  EXPECT_TRUE(back.children.empty());
  auto decode_with = [&](std::vector<ChildPageRef> pages) {
    engine::ObjectRecord r = g;
    r.child_pages = std::move(pages);
    return engine::DecodeObject(engine::EncodeObject(r), engine::BlockType::kGroup, kEnd, 2);
  };
  EXPECT_CODE(decode_with({{"a", {engine::kDataStart, 64}, 3}}), Code::kCorruption);  // first key not ""
  EXPECT_CODE(decode_with({{"", {engine::kDataStart, 64}, 3}, {"", {engine::kDataStart, 64}, 3}}), Code::kCorruption);
  EXPECT_CODE(decode_with({{"", {engine::kDataStart, 64}, 0}}), Code::kCorruption);  // empty page
  EXPECT_CODE(decode_with({{"", {kEnd, 64}, 3}}), Code::kCorruption);                // out of bounds
  EXPECT_CODE(decode_with({{"", {engine::kDataStart, 64}, 3}, {"a/b", {engine::kDataStart, 64}, 3}}),
              Code::kCorruption);  // not a name
  // A version 1 reader of the same bytes sees no valid inline list.
  EXPECT_FALSE(engine::DecodeObject(payload, engine::BlockType::kGroup, kEnd, 1).has_value());
}

std::string Name(uint64_t i) { return "entry-" + std::to_string(i * 7919 % 1000003); }

DatasetOptions Tiny() { return {.dtype = DType::kU1, .shape = {0}, .max_shape = {kUnlimited}}; }

std::set<std::string> Listing(Container& c, const std::string& group) {
  std::set<std::string> out;
  auto id = c.Resolve(group);
  if (!id) return {"ERROR " + id.error().ToString()};
  auto list = c.List(*id);
  if (!list) return {"ERROR " + list.error().ToString()};
  for (const Entry& e : *list) out.insert(e.name);
  return out;
}

// Checks the disk with fsck; returns how many group pages it holds (object
// blocks beyond one per object).
uint64_t ExpectClean(const std::shared_ptr<testutil::Disk>& disk, const std::string& when) {
  auto r = engine::CheckFile(std::make_unique<testutil::FaultFile>(disk), {});
  EXPECT_TRUE(r.has_value());
  if (!r) return 0;
  EXPECT_TRUE(r->clean()) << when << ": " << (r->findings.empty() ? "leaks" : r->findings[0].what);
  return r->stats.object_blocks - r->stats.groups - r->stats.datasets;
}

TEST(GroupPagesTest, OneChangeInABigGroupWritesOnePageAndTheTable) {
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  ASSERT_OK(c->MakeGroups("/big"));
  constexpr uint64_t kN = 20000;  // ~ 600 KB of entries
  for (uint64_t i = 0; i < kN; ++i) {
    ASSERT_OK(c->CreateDataset("/big/" + Name(i), Tiny()));
    if (i % 5000 == 4999) ASSERT_OK(c->Commit());
  }
  ASSERT_OK(c->Commit());
  // Create, rename and remove one entry, each in its own commit.
  for (int op = 0; op < 3; ++op) {
    const int64_t before = disk->bytes_written;
    if (op == 0) ASSERT_OK(c->CreateDataset("/big/one-more", Tiny()));
    if (op == 1) ASSERT_OK(c->Rename("/big/" + Name(17), "/big/" + Name(17) + ".renamed"));
    if (op == 2) ASSERT_OK(c->Remove("/big/" + Name(99)));
    ASSERT_OK(c->Commit());
    const int64_t wrote = disk->bytes_written - before;
    EXPECT_LT(wrote, 64 * 1024) << "op " << op << " wrote " << wrote << " bytes";
  }
  ASSERT_OK(c->Close());
  c.reset();
  EXPECT_GT(ExpectClean(disk, "after the big group"), 30u) << "the group is written in pages";
  ASSERT_OK_AND_ASSIGN(c, OpenOnDisk(disk));
  std::set<std::string> want;
  for (uint64_t i = 0; i < kN; ++i) want.insert(Name(i));
  want.insert("one-more");
  want.erase(Name(17));
  want.insert(Name(17) + ".renamed");
  want.erase(Name(99));
  EXPECT_EQ(Listing(*c, "/big"), want);
}

TEST(GroupPagesTest, RandomChangesKeepEveryNameThroughCommitsAndReopens) {
  auto disk = NewDisk();
  auto c = OpenOnDisk(disk);
  ASSERT_TRUE(c.has_value());
  ASSERT_OK((*c)->MakeGroups("/g"));
  ASSERT_OK((*c)->MakeGroups("/h"));
  std::map<std::string, std::set<std::string>> model = {{"/g", {}}, {"/h", {}}};
  std::mt19937_64 rng(11);
  uint64_t next = 0;
  bool paged = false, inline_again = false;
  for (int round = 0; round < 120; ++round) {
    // Bursts of inserts (the group grows past a page and splits), then
    // removals (pages merge, the group goes back inline), renames within
    // and across the two groups.
    const bool grow = (round / 30) % 2 == 0;
    for (int k = 0; k < 60; ++k) {
      const std::string g = rng() % 4 == 0 ? "/h" : "/g";
      auto& names = model[g];
      const uint64_t what = rng() % 10;
      if ((grow && what < 7) || names.empty()) {
        const std::string n = Name(next++);
        ASSERT_OK((*c)->CreateDataset(g + "/" + n, Tiny()));
        names.insert(n);
      } else if (what < 8 || !grow) {
        auto it = names.begin();
        std::advance(it, static_cast<long>(rng() % names.size()));
        if (what % 2 == 0) {
          ASSERT_OK((*c)->Remove(g + "/" + *it));
          names.erase(it);
        } else {
          const std::string to_group = rng() % 2 ? "/g" : "/h";
          const std::string to = "r" + std::to_string(next++);
          ASSERT_OK((*c)->Rename(g + "/" + *it, to_group + "/" + to));
          names.erase(it);
          model[to_group].insert(to);
        }
      }
    }
    ASSERT_OK((*c)->Commit());
    if (round % 10 == 9) {
      c->reset();
      const uint64_t pages = ExpectClean(disk, "round " + std::to_string(round));
      if (pages > 2) paged = true;
      if (paged && pages == 0) inline_again = true;
      c = OpenOnDisk(disk);
      ASSERT_TRUE(c.has_value()) << c.error().ToString();
    }
    for (const auto& [g, names] : model) ASSERT_EQ(Listing(**c, g), names) << "round " << round << " " << g;
  }
  EXPECT_TRUE(paged) << "the groups grew into pages";
  EXPECT_TRUE(inline_again) << "and shrank back inline";
}

TEST(GroupPagesTest, ACrashAtAnyWriteOfACommitLeavesTheOldOrTheNewListing) {
  // State A: a paged group; B: entries added, removed and renamed across
  // pages (the first page's names included).
  auto build_a = [](Container& c) {
    ASSERT_OK(c.MakeGroups("/g"));
    for (uint64_t i = 0; i < 3000; ++i) ASSERT_OK(c.CreateDataset("/g/" + Name(i), Tiny()));
    ASSERT_OK(c.Commit());
  };
  auto apply_b = [](Container& c) {
    for (uint64_t i = 0; i < 3000; i += 97) ASSERT_OK(c.Remove("/g/" + Name(i)));
    for (uint64_t i = 5000; i < 5100; ++i) ASSERT_OK(c.CreateDataset("/g/" + Name(i), Tiny()));
    ASSERT_OK(c.Rename("/g/" + Name(1), "/g/" + Name(1) + "x"));
    ASSERT_OK(c.CreateDataset("/g/0-first", Tiny()));
  };
  std::set<std::string> state_a, state_b;
  int64_t commit_writes = 0;
  {
    auto disk = NewDisk();
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
    build_a(*c);
    state_a = Listing(*c, "/g");
    apply_b(*c);
    const int64_t w = disk->writes;
    ASSERT_OK(c->Commit());
    commit_writes = disk->writes - w;
    state_b = Listing(*c, "/g");
  }
  ASSERT_NE(state_a, state_b);
  int olds = 0, news = 0;
  for (int64_t k = 0; k <= commit_writes; k += std::max<int64_t>(1, commit_writes / 40)) {
    auto disk = NewDisk();
    {
      ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
      build_a(*c);
      apply_b(*c);
      disk->crash_after = disk->writes + k;
      (void)c->Commit();
    }
    for (uint64_t seed = 0; seed < 3; ++seed) {
      std::mt19937_64 rng(seed + 100 * static_cast<uint64_t>(k));
      auto after = testutil::DiskWithImage(disk->CrashImage(rng, seed == 0 ? 0.0 : 0.5, seed == 2 ? 0.3 : 0.0));
      ASSERT_OK_AND_ASSIGN(auto r, OpenOnDisk(after, {.read_only = true}));
      const std::set<std::string> got = Listing(*r, "/g");
      if (got == state_a) ++olds;
      else if (got == state_b) ++news;
      else FAIL() << "crash after write " << k << " of " << commit_writes << ": neither listing";
      r.reset();
      ExpectClean(after, "crash after write " + std::to_string(k));
    }
  }
  EXPECT_GT(olds, 0);
  EXPECT_GT(news, 0);
}

}  // namespace
}  // namespace slabfs
