// Groups with many children (engine/txn/group_pages.h): the page and page
// table formats and their hostile inputs; a change to one entry of a big
// group writes one page and the table, and of a group with page tables one
// page, one page table and a small group block, as many bytes at 4x the
// entries; random inserts, removals and renames keep every name through
// commits and reopens (fsck clean), with short names (pages) and long ones
// (page tables too); a group goes back inline when it shrinks; and a crash
// at any write of a commit leaves the old or the new listing.
#include "engine/txn/group_pages.h"

#include <gtest/gtest.h>

#include <algorithm>
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
namespace group_pages_test {  // its own names in a unity batch

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

// Entry names; a long `pad` makes many pages of few entries each, so that
// a group of a few thousand entries has page tables.
std::string Name(uint64_t i, size_t pad = 0) {
  return "entry-" + std::to_string(i * 7919 % 1000003) + std::string(pad, 'p');
}

std::vector<ChildPageRef> PageRefs() {
  return {{"", {engine::kDataStart, 64}, 3},
          {"beta", {engine::kDataStart + 64, 64}, 1},
          {"gamma", {engine::kDataStart + 128, 64}, 7}};
}

TEST(GroupPageFormatTest, PageTableRoundTripsAndRejectsHostileTables) {
  const auto p = PageRefs();
  const std::string table = engine::EncodeGroupPageTable(9, p.data(), p.size());
  const std::string next = "zeta";
  ASSERT_OK_AND_ASSIGN(auto back, engine::DecodeGroupPageTable(table, 9, ChildPageRef{"", {}, 3}, &next, kEnd));
  EXPECT_EQ(back, p);
  // Another group's table, a count its group does not say, a first key
  // other than the table's, a page at or past the next table's key, a page
  // out of bounds, truncation at every length.
  EXPECT_CODE(engine::DecodeGroupPageTable(table, 8, ChildPageRef{"", {}, 3}, &next, kEnd), Code::kCorruption);
  EXPECT_CODE(engine::DecodeGroupPageTable(table, 9, ChildPageRef{"", {}, 2}, &next, kEnd), Code::kCorruption);
  EXPECT_CODE(engine::DecodeGroupPageTable(table, 9, ChildPageRef{"a", {}, 3}, &next, kEnd), Code::kCorruption);
  const std::string low = "gamma";
  EXPECT_CODE(engine::DecodeGroupPageTable(table, 9, ChildPageRef{"", {}, 3}, &low, kEnd), Code::kCorruption);
  EXPECT_CODE(engine::DecodeGroupPageTable(table, 9, ChildPageRef{"", {}, 3}, &next, engine::kDataStart + 128),
              Code::kCorruption);
  for (size_t n = 0; n < table.size(); ++n)
    EXPECT_FALSE(engine::DecodeGroupPageTable(table.substr(0, n), 9, ChildPageRef{"", {}, 3}, &next, kEnd).has_value());
  EXPECT_FALSE(engine::DecodeGroupPageTable(table + "x", 9, ChildPageRef{"", {}, 3}, &next, kEnd).has_value());
  // Out of order, and a page of no entries.
  std::vector<ChildPageRef> swapped = {p[0], p[2], p[1]};
  EXPECT_CODE(engine::DecodeGroupPageTable(engine::EncodeGroupPageTable(9, swapped.data(), 3), 9,
                                           ChildPageRef{"", {}, 3}, nullptr, kEnd),
              Code::kCorruption);
  std::vector<ChildPageRef> empty = p;
  empty[1].entries = 0;
  EXPECT_CODE(engine::DecodeGroupPageTable(engine::EncodeGroupPageTable(9, empty.data(), 3), 9, ChildPageRef{"", {}, 3},
                                           nullptr, kEnd),
              Code::kCorruption);
}

TEST(GroupPageFormatTest, AGroupWithPageTablesIsVersionThree) {
  engine::ObjectRecord g;
  g.id = 9;
  g.kind = ObjectKind::kGroup;
  g.child_tables = {{"", {engine::kDataStart, 64}, 40}, {"m", {engine::kDataStart + 64, 64}, 33}};
  EXPECT_EQ(engine::ObjectBlockVersion(g), 3);
  const std::string payload = engine::EncodeObject(g);
  ASSERT_OK_AND_ASSIGN(auto back, engine::DecodeObject(payload, engine::BlockType::kGroup, kEnd, 3));
  EXPECT_EQ(back.child_tables, g.child_tables);
  EXPECT_TRUE(back.child_pages.empty());
  EXPECT_TRUE(back.children.empty());
  g.child_tables[0].key = "a";  // the first table's key is ""
  EXPECT_CODE(engine::DecodeObject(engine::EncodeObject(g), engine::BlockType::kGroup, kEnd, 3), Code::kCorruption);
  // A block of version 3 is a group's only: a build that knows version 2
  // at most refuses it by its version (MaxBlockVersion), never misreads it.
  EXPECT_EQ(engine::MaxBlockVersion(engine::BlockType::kGroup), 3);
  EXPECT_EQ(engine::MaxBlockVersion(engine::BlockType::kGroupPageTable), 1);
}

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

// Bytes one create, one rename and one removal write, each in its own
// commit, in group `g` of `c`.
int64_t BytesOfThreeChanges(Container& c, testutil::Disk& disk, const std::string& g, size_t pad) {
  int64_t most = 0;
  for (int op = 0; op < 3; ++op) {
    const int64_t before = disk.bytes_written;
    if (op == 0) EXPECT_OK(c.CreateDataset(g + "/" + Name(999999, pad), Tiny()));
    if (op == 1) EXPECT_OK(c.Rename(g + "/" + Name(17, pad), g + "/" + Name(17, pad) + "r"));
    if (op == 2) EXPECT_OK(c.Remove(g + "/" + Name(99, pad)));
    EXPECT_OK(c.Commit());
    most = std::max(most, disk.bytes_written - before);
  }
  return most;
}

TEST(GroupPagesTest, AGroupOfManyPagesWritesOnePageTableAndASmallBlockPerChange) {
  // Names of ~220 bytes: about 70 entries a page. 2,500 entries make ~40
  // pages (a table in the group block); 10,000 make ~150 (page tables,
  // whose table in the group block would have taken ~35 KB).
  constexpr size_t kPad = 200;
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  ASSERT_OK(c->MakeGroups("/small"));
  ASSERT_OK(c->MakeGroups("/big"));
  for (uint64_t i = 0; i < 10000; ++i) {
    if (i < 2500) ASSERT_OK(c->CreateDataset("/small/" + Name(i, kPad), Tiny()));
    ASSERT_OK(c->CreateDataset("/big/" + Name(i, kPad), Tiny()));
  }
  ASSERT_OK(c->Commit());
  const int64_t small = BytesOfThreeChanges(*c, *disk, "/small", kPad);
  const int64_t big = BytesOfThreeChanges(*c, *disk, "/big", kPad);
  // A page (at most 16 KiB) and a page table (at most 64 references of
  // ~230 bytes) besides what every commit writes.
  EXPECT_LT(big, small + 20 * 1024) << "4x the entries: " << big << " bytes a change, " << small << " at 2,500";
  ASSERT_OK(c->Close());
  c.reset();
  EXPECT_GT(ExpectClean(disk, "after the big group"), 150u);
  ASSERT_OK_AND_ASSIGN(c, OpenOnDisk(disk, {.read_only = true}));
  std::set<std::string> want;
  for (uint64_t i = 0; i < 10000; ++i) want.insert(Name(i, kPad));
  want.insert(Name(999999, kPad));
  want.erase(Name(17, kPad));
  want.insert(Name(17, kPad) + "r");
  want.erase(Name(99, kPad));
  EXPECT_EQ(Listing(*c, "/big"), want);
}

class GroupPagesRandomTest : public ::testing::TestWithParam<size_t> {};

TEST_P(GroupPagesRandomTest, RandomChangesKeepEveryNameThroughCommitsAndReopens) {
  const size_t pad = GetParam();
  // Long names: each round's changes are five times as many, so the group
  // grows past kInlineTablePages pages into page tables and shrinks back.
  const int changes = pad == 0 ? 60 : 300;
  auto disk = NewDisk();
  auto c = OpenOnDisk(disk);
  ASSERT_TRUE(c.has_value());
  ASSERT_OK((*c)->MakeGroups("/g"));
  ASSERT_OK((*c)->MakeGroups("/h"));
  std::map<std::string, std::set<std::string>> model = {{"/g", {}}, {"/h", {}}};
  std::mt19937_64 rng(11);
  uint64_t next = 0;
  bool paged = false, tables = false, inline_again = false;
  for (int round = 0; round < 120; ++round) {
    // Bursts of inserts (the group grows past a page and splits), then
    // removals (pages merge, the group goes back inline), renames within
    // and across the two groups.
    const bool grow = (round / 30) % 2 == 0;
    for (int k = 0; k < changes; ++k) {
      // Growing rounds favour /g; shrinking ones take from the bigger group.
      const std::string g =
          grow ? (rng() % 4 == 0 ? "/h" : "/g") : (model["/g"].size() >= model["/h"].size() ? "/g" : "/h");
      auto& names = model[g];
      const uint64_t what = rng() % 10;
      if ((grow && what < 7) || names.empty()) {
        const std::string n = Name(next++, pad);
        ASSERT_OK((*c)->CreateDataset(g + "/" + n, Tiny()));
        names.insert(n);
      } else if (what < 8 || !grow) {
        auto it = names.begin();
        std::advance(it, static_cast<long>(rng() % names.size()));
        // Shrinking rounds mostly remove, so long names go back inline too.
        if (grow ? what % 2 == 0 : what < 9) {
          ASSERT_OK((*c)->Remove(g + "/" + *it));
          names.erase(it);
        } else {
          const std::string to_group = rng() % 2 ? "/g" : "/h";
          const std::string to = "r" + std::to_string(next++) + std::string(pad, 'p');
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
      if (pages > engine::GroupPages::kInlineTablePages + 1) tables = true;
      if (paged && pages == 0) inline_again = true;
      c = OpenOnDisk(disk);
      ASSERT_TRUE(c.has_value()) << c.error().ToString();
    }
    for (const auto& [g, names] : model) ASSERT_EQ(Listing(**c, g), names) << "round " << round << " " << g;
  }
  EXPECT_TRUE(paged) << "the groups grew into pages";
  if (pad > 0) {
    EXPECT_TRUE(tables) << "and into page tables";
  }
  EXPECT_TRUE(inline_again) << "and shrank back inline";
}

INSTANTIATE_TEST_SUITE_P(ShortAndLongNames, GroupPagesRandomTest, ::testing::Values(size_t{0}, size_t{200}));

class GroupPagesCrashTest : public ::testing::TestWithParam<size_t> {};

TEST_P(GroupPagesCrashTest, ACrashAtAnyWriteOfACommitLeavesTheOldOrTheNewListing) {
  // State A: a paged group (long names: with page tables); B: entries
  // added, removed and renamed across pages (the first page's names
  // included).
  const size_t pad = GetParam();
  auto build_a = [pad](Container& c) {
    ASSERT_OK(c.MakeGroups("/g"));
    for (uint64_t i = 0; i < 3000; ++i) ASSERT_OK(c.CreateDataset("/g/" + Name(i, pad), Tiny()));
    ASSERT_OK(c.Commit());
  };
  auto apply_b = [pad](Container& c) {
    for (uint64_t i = 0; i < 3000; i += 97) ASSERT_OK(c.Remove("/g/" + Name(i, pad)));
    for (uint64_t i = 5000; i < 5100; ++i) ASSERT_OK(c.CreateDataset("/g/" + Name(i, pad), Tiny()));
    ASSERT_OK(c.Rename("/g/" + Name(1, pad), "/g/" + Name(1, pad) + "x"));
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
    c.reset();
    const uint64_t pages = ExpectClean(disk, "state B");
    if (pad > 0) {
      EXPECT_GT(pages, engine::GroupPages::kInlineTablePages + 1) << "the group has page tables";
    }
  }
  ASSERT_NE(state_a, state_b);
  int olds = 0, news = 0;
  std::vector<int64_t> crash_points;
  for (int64_t k = 0; k < commit_writes; k += std::max<int64_t>(1, commit_writes / 40)) crash_points.push_back(k);
  crash_points.push_back(commit_writes);  // the whole commit
  for (const int64_t k : crash_points) {
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
      if (got == state_a)
        ++olds;
      else if (got == state_b)
        ++news;
      else
        FAIL() << "crash after write " << k << " of " << commit_writes << ": neither listing";
      r.reset();
      ExpectClean(after, "crash after write " + std::to_string(k));
    }
  }
  EXPECT_GT(olds, 0);
  EXPECT_GT(news, 0);
}

// 3,000 names of ~220 bytes make ~60-90 pages: page tables.
INSTANTIATE_TEST_SUITE_P(ShortAndLongNames, GroupPagesCrashTest, ::testing::Values(size_t{0}, size_t{200}));

}  // namespace group_pages_test
}  // namespace
}  // namespace slabfs
