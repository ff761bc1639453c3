// Crash safety: a simulated power loss after every single write (and sync) of a commit
// reopens to the previous commit or the new one, never anything else.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>

#include "engine/format/free_list.h"
#include "engine/fsck/check_file.h"
#include "tests/testutil/mem_container.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs {
namespace {

using testutil::Disk;
using testutil::DiskWithImage;
using testutil::NewDisk;
using testutil::OpenOnDisk;

// A canonical text of everything visible in a container.
std::string Dump(Container& c, ObjectId id, const std::string& path) {
  std::string out;
  auto info = c.Stat(id);
  if (!info) return "ERROR " + info.error().ToString();
  auto attrs = c.ListAttributes(id);
  if (!attrs) return "ERROR " + attrs.error().ToString();
  for (const auto& a : *attrs) {
    auto v = c.GetAttribute(id, a);
    out += path + " @" + a + "=" + (v ? v->ToText() : "ERROR") + "\n";
  }
  if (info->kind == ObjectKind::kDataset) {
    auto d = c.OpenDataset(id);
    if (!d) return "ERROR " + d.error().ToString();
    std::string data(d->size_bytes(), '\0');
    Status s = d->ReadElements(0, d->num_elements(), data.data());
    if (!s.ok()) return "ERROR " + s.ToString();
    out += path + " = " + FormatDims(d->info().shape) + " " + std::to_string(std::hash<std::string>()(data)) + "\n";
    if (d->info().sparse) {
      auto boxes = d->Defined(Slab::All(d->info().shape));
      if (!boxes) return "ERROR " + boxes.error().ToString();
      out += path + " defined " + std::to_string(d->info().defined_elements) + " in";
      for (const Box& b : *boxes) out += " " + FormatDims(b.start) + "+" + FormatDims(b.count);
      out += "\n";
    }
    return out;
  }
  out += path + "/\n";
  auto list = c.List(id);
  if (!list) return "ERROR " + list.error().ToString();
  for (const auto& e : *list) out += Dump(c, e.id, path + "/" + e.name);
  return out;
}

std::string DumpDisk(const std::shared_ptr<Disk>& disk) {
  auto c = OpenOnDisk(disk, {.read_only = true});
  if (!c) return "OPEN ERROR " + c.error().ToString();
  return Dump(**c, kRootId, "");
}

// State A: a few groups, datasets with data, attributes.
void BuildA(Container& c) {
  ASSERT_OK(c.MakeGroups("/g/h"));
  ASSERT_OK_AND_ASSIGN(Dataset d,
                       c.CreateDataset("/g/d", {.dtype = DType::kF4, .shape = {40, 50}, .chunks = {16, 16}}));
  std::vector<float> v(2000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f;
  ASSERT_OK(d.WriteElements(0, 2000, v.data()));
  ASSERT_OK_AND_ASSIGN(Dataset e, c.CreateDataset("/e", {.dtype = DType::kU2, .shape = {1000}, .chunks = {64}}));
  std::vector<uint16_t> w(1000, 3);
  ASSERT_OK(e.WriteElements(0, 1000, w.data()));
  ASSERT_OK(c.SetAttribute(d.id(), "units", Attribute::String("m")));
  // One dataset per index kind, with data.
  ASSERT_OK(c.MakeGroups("/idx"));
  // The filtered ones have variable-size chunks (16-byte records).
  struct Kind {
    const char* name;
    Dims shape, max_shape, chunks;
    const char* filters = "";
  } kinds[] = {
      {"single", {5, 6}, {8, 8}, {8, 8}},
      {"compact", {5, 6}, {}, {3, 3}},
      {"fixed", {5, 600}, {}, {1, 1}},  // 3000 chunks: six leaves under a node
      {"extensible", {700, 3}, {kUnlimited, 3}, {1, 3}},
      {"btree", {40, 30}, {kUnlimited, kUnlimited}, {2, 1}},
      {"fixed_filtered", {50, 60}, {}, {8, 8}, "shuffle,deflate=6,checksum"},
      {"extensible_filtered", {70, 30}, {kUnlimited, 30}, {4, 30}, "deflate=1"},
  };
  // A sparse dataset, filtered: defined regions in a few chunks.
  ASSERT_OK_AND_ASSIGN(
      Dataset sp,
      c.CreateDataset(
          "/sparse",
          {.dtype = DType::kU2, .shape = {40, 40}, .chunks = {8, 8}, .filters = "deflate=1", .sparse = true}));
  std::vector<uint16_t> patch(10 * 12, 5);
  ASSERT_OK(sp.Write(Slab::Box({3, 4}, {10, 12}), patch.data()));
  ASSERT_OK(sp.Write(Slab::Box({30, 30}, {2, 2}), patch.data()));
  for (const Kind& k : kinds) {
    ASSERT_OK_AND_ASSIGN(Dataset x, c.CreateDataset(std::string("/idx/") + k.name, {.dtype = DType::kU2,
                                                                                    .shape = k.shape,
                                                                                    .max_shape = k.max_shape,
                                                                                    .chunks = k.chunks,
                                                                                    .filters = k.filters}));
    const std::string_view kind = IndexKindName(x.info().index);
    ASSERT_EQ(std::string(k.name).substr(0, kind.size()), kind);
    std::vector<uint16_t> data(x.num_elements());
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint16_t>(i * 7 + 1);
    ASSERT_OK(x.WriteElements(0, data.size(), data.data()));
  }
}

// Changes B: every kind of change a commit carries.
void ApplyB(Container& c) {
  ASSERT_OK_AND_ASSIGN(Dataset d, c.OpenDataset("/g/d"));
  std::vector<float> patch(7 * 9, -1.f);
  ASSERT_OK(d.Write(Slab::Box({10, 20}, {7, 9}), patch.data()));  // partial chunks, through the cache
  std::vector<float> whole(16 * 16, 9.f);
  ASSERT_OK(d.Write(Slab::Box({16, 16}, {16, 16}), whole.data()));  // a whole chunk, straight to the file
  ASSERT_OK(c.Remove("/e"));                                        // frees a dataset
  ASSERT_OK(c.MakeGroups("/new/deep"));
  ASSERT_OK_AND_ASSIGN(Dataset n, c.CreateDataset("/new/deep/n", {.dtype = DType::kI8, .shape = {3, 3}}));
  int64_t one = 77;
  ASSERT_OK(n.Write(Slab::Box({1, 1}, {1, 1}), &one));
  ASSERT_OK(c.Rename("/g/h", "/new/h2"));
  ASSERT_OK(c.SetAttribute(kRootId, "version", Attribute::Integer(2)));
  ASSERT_OK(c.DeleteAttribute(d.id(), "units"));
  // Every index kind changes: records rewritten, added (growth) and removed
  // (shrinking).
  for (const char* name :
       {"single", "compact", "fixed", "extensible", "btree", "fixed_filtered", "extensible_filtered"}) {
    ASSERT_OK_AND_ASSIGN(Dataset x, c.OpenDataset(std::string("/idx/") + name));
    uint16_t v = 999;
    ASSERT_OK(x.WriteElements(1, 1, &v));
  }
  ASSERT_OK_AND_ASSIGN(Dataset single, c.OpenDataset("/idx/single"));
  ASSERT_OK(single.Resize({8, 3}));
  ASSERT_OK_AND_ASSIGN(Dataset fixed, c.OpenDataset("/idx/fixed"));
  std::vector<uint16_t> row(600, 4);
  ASSERT_OK(fixed.Write(Slab::Box({4, 0}, {1, 600}), row.data()));
  ASSERT_OK_AND_ASSIGN(Dataset ext, c.OpenDataset("/idx/extensible"));
  std::vector<uint16_t> more(3 * 600, 5);
  ASSERT_OK(ext.WriteBytes(ext.size_bytes(), more.size() * 2, more.data(), Dataset::Growth::kGrowRows));
  ASSERT_OK_AND_ASSIGN(Dataset bt, c.OpenDataset("/idx/btree"));
  ASSERT_OK(bt.Resize({15, 50}));
  std::vector<uint16_t> corner(15 * 20, 6);
  ASSERT_OK(bt.Write(Slab::Box({0, 30}, {15, 20}), corner.data()));
  // Filtered chunks change size (random values do not compress), are
  // rewritten whole and grow.
  ASSERT_OK_AND_ASSIGN(Dataset ff, c.OpenDataset("/idx/fixed_filtered"));
  std::vector<uint16_t> noise(8 * 8);
  for (size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<uint16_t>(i * 2654435761u >> 13);
  ASSERT_OK(ff.Write(Slab::Box({8, 8}, {8, 8}), noise.data()));
  ASSERT_OK(ff.Write(Slab::Box({40, 50}, {3, 5}), noise.data()));
  // Sparse: erase part of a region, free a chunk by erasing all it held,
  // define new elements.
  ASSERT_OK_AND_ASSIGN(Dataset sp, c.OpenDataset("/sparse"));
  ASSERT_OK(sp.Erase(Slab::Box({5, 4}, {3, 12})));
  ASSERT_OK(sp.Erase(Slab::Box({30, 30}, {2, 2})));
  ASSERT_OK(sp.Write(Slab::Box({20, 0}, {1, 40}), noise.data()));
  ASSERT_OK_AND_ASSIGN(Dataset ef, c.OpenDataset("/idx/extensible_filtered"));
  ASSERT_OK(ef.Resize({90, 30}));
  ASSERT_OK(ef.Write(Slab::Box({72, 0}, {2, 30}), noise.data()));
}

// `n` small commits after A (an attribute changed each time): each writes a
// free-list delta, so B's commit writes a delta on a chain that many deep,
// or, at the chain's limit, a new base that frees the chain.
void WarmUp(Container& c, int n) {
  for (int i = 0; i < n; ++i) {
    ASSERT_OK(c.SetAttribute(kRootId, "warm", Attribute::Integer(i)));
    ASSERT_OK(c.Commit());
  }
}

// Small changes B': what one file's life through the mount commits (a new
// small dataset, its rename, an attribute, a removal, a group): few, small
// extents, so the commit lists them in its superblock and makes one
// fdatasync (format/superblock.h).
void ApplySmall(Container& c) {
  ASSERT_OK_AND_ASSIGN(
      Dataset f,
      c.CreateDataset("/g/f", {.dtype = DType::kU1, .shape = {0}, .max_shape = {kUnlimited}, .chunks = {1 << 20}}));
  const std::string text = "a small file, as tar x writes thousands of them\n";
  ASSERT_OK(f.WriteBytes(0, text.size(), text.data(), Dataset::Growth::kGrowRows));
  ASSERT_OK(c.Rename("/g/f", "/g/f2"));
  ASSERT_OK(c.SetAttribute(f.id(), "user.mime", Attribute::String("text/plain")));
  ASSERT_OK(c.Remove("/e"));
  ASSERT_OK(c.MakeGroups("/g/h/i"));
  ASSERT_OK_AND_ASSIGN(Dataset d, c.OpenDataset("/g/d"));
  float v = 42.f;
  ASSERT_OK(d.Write(Slab::Box({3, 3}, {1, 1}), &v));
}

struct Changes {
  const char* name;
  void (*apply)(Container&);
  int64_t syncs;  // what the commit makes
};

const Changes kChanges[] = {{"every_kind", ApplyB, 2}, {"small", ApplySmall, 1}};

class CommitTest : public ::testing::TestWithParam<std::tuple<int, int>> {
 protected:
  int warm_up() const { return std::get<0>(GetParam()); }
  const Changes& changes() const { return kChanges[std::get<1>(GetParam())]; }
  // Disk with state A committed (and warm_up() small commits after it),
  // and the changes applied to *c.
  std::shared_ptr<Disk> DiskWithB(std::unique_ptr<Container>* c) {
    auto disk = NewDisk();
    auto opened = OpenOnDisk(disk);
    EXPECT_TRUE(opened.has_value());
    *c = std::move(*opened);
    BuildA(**c);
    EXPECT_OK((*c)->Commit());
    WarmUp(**c, warm_up());
    changes().apply(**c);
    return disk;
  }
};

// No warm-up, a delta on a short chain, a delta that takes in the 7 before
// it (FreeListLog::kFanIn), and one that merges two tiers at once (63 =
// 7 x 8 + 7 deltas before it); each with a large commit (two fdatasyncs)
// and a small one (one).
INSTANTIATE_TEST_SUITE_P(FreeListChains, CommitTest,
                         ::testing::Combine(::testing::Values(0, 5, 7, 63), ::testing::Values(0, 1)),
                         [](const auto& param_info) {
                           return std::string(kChanges[std::get<1>(param_info.param)].name) + "_after_" +
                                  std::to_string(std::get<0>(param_info.param));
                         });

TEST_P(CommitTest, CrashAfterEveryWriteLeavesOldOrNewState) {
  std::string state_a, state_b;
  int64_t commit_writes;
  {
    std::unique_ptr<Container> c;
    auto disk = NewDisk();
    {
      ASSERT_OK_AND_ASSIGN(auto c0, OpenOnDisk(disk));
      BuildA(*c0);
      ASSERT_OK(c0->Commit());
      WarmUp(*c0, warm_up());
      ASSERT_OK(c0->Close());
    }
    state_a = DumpDisk(disk);
    auto disk_b = DiskWithB(&c);
    int64_t before = disk_b->writes, syncs = disk_b->syncs;
    ASSERT_OK(c->Commit());
    commit_writes = disk_b->writes - before;
    EXPECT_EQ(disk_b->syncs - syncs, changes().syncs);
    state_b = DumpDisk(disk_b);
    c.reset();
  }
  ASSERT_NE(state_a, state_b);
  ASSERT_EQ(state_a.find("ERROR"), std::string::npos) << state_a;
  ASSERT_GT(commit_writes, 3);

  int new_states = 0, old_states = 0;
  for (int64_t k = 0; k <= commit_writes; ++k) {
    std::unique_ptr<Container> c;
    auto disk = DiskWithB(&c);
    disk->crash_after = disk->writes + k;  // writes and syncs after the k-th of the commit fail
    Status s = c->Commit();
    if (k < commit_writes) {
      EXPECT_FALSE(s.ok()) << "k=" << k;
    }
    c.reset();  // the destructor's retry also fails: the "machine" is down
    // Power loss: several images a disk might hold.
    for (uint64_t seed = 0; seed < 6; ++seed) {
      std::mt19937_64 rng(seed * 1000 + k);
      double keep = seed == 0 ? 0.0 : seed == 1 ? 1.0 : 0.5;
      double torn = seed < 2 ? 0.0 : 0.3;
      auto after = DiskWithImage(disk->CrashImage(rng, keep, torn));
      std::string got = DumpDisk(after);
      // The state's free list survives too: every byte owned once.
      auto report = engine::CheckFile(std::make_unique<testutil::FaultFile>(after), {.verify_data = false});
      ASSERT_TRUE(report.has_value());
      EXPECT_TRUE(report->clean()) << "crash after write " << k << " (seed " << seed
                                   << "): " << (report->findings.empty() ? "leaks" : report->findings[0].what);
      if (got == state_b) {
        ++new_states;
      } else if (got == state_a) {
        ++old_states;
      } else {
        FAIL() << "crash after write " << k << " of " << commit_writes << " (seed " << seed << ") left:\n"
               << got << "\nexpected A:\n"
               << state_a << "\nor B:\n"
               << state_b;
      }
      // A writer opening the image commits on top of what it found, and
      // that reads back.
      {
        auto w = OpenOnDisk(after);
        ASSERT_TRUE(w.has_value()) << w.error().ToString();
        ASSERT_OK((*w)->SetAttribute(kRootId, "after", Attribute::Integer(k)));
        ASSERT_OK((*w)->Close());
      }
      auto again = engine::CheckFile(std::make_unique<testutil::FaultFile>(after), {.verify_data = true});
      ASSERT_TRUE(again.has_value());
      EXPECT_TRUE(again->clean()) << "a commit after the crash after write " << k << " (seed " << seed << ")";
    }
  }
  EXPECT_GT(old_states, 0);
  EXPECT_GT(new_states, 0);
}

// A single-flush commit whose superblock reached the disk but one of whose
// extents did not is taken for what it is: incomplete. The open uses the
// commit before, and fsck says so as a warning, not as damage.
TEST(SingleFlushCommitTest, AnIncompleteCommitGivesWayToTheOneBefore) {
  auto disk = NewDisk();
  {
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
    BuildA(*c);
    ASSERT_OK(c->Close());
  }
  const std::string state_a = DumpDisk(disk);
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  ApplySmall(*c);
  // Every write of the commit reaches the disk's cache; the sync fails.
  std::vector<Disk::Write> writes;
  disk->crash_after = INT64_MAX;
  {
    std::lock_guard lock(disk->mu);
    disk->unsynced.clear();
  }
  const int64_t before = disk->writes;
  // Stop at the sync: count the commit's writes on a twin first.
  int64_t n;
  {
    auto twin = NewDisk();
    ASSERT_OK_AND_ASSIGN(auto t, OpenOnDisk(twin));
    BuildA(*t);
    ASSERT_OK(t->Close());
    t.reset();
    ASSERT_OK_AND_ASSIGN(t, OpenOnDisk(twin));
    ApplySmall(*t);
    const int64_t w = twin->writes, syncs = twin->syncs;
    ASSERT_OK(t->Commit());
    ASSERT_EQ(twin->syncs - syncs, 1);
    n = twin->writes - w;  // the writes, then the one sync
  }
  disk->crash_after = before + n - 1;
  EXPECT_FALSE(c->Commit().ok());
  c->Discard();
  c.reset();
  {
    std::lock_guard lock(disk->mu);
    writes = disk->unsynced;
  }
  ASSERT_GE(writes.size(), 3u);
  // The superblock (the last write) and all but one of the rest arrive.
  for (size_t lost = 0; lost + 1 < writes.size(); ++lost) {
    SCOPED_TRACE("write " + std::to_string(lost) + " lost");
    std::string img = disk->durable;
    for (size_t i = 0; i < writes.size(); ++i) {
      if (i == lost) continue;
      const auto& w = writes[i];
      if (img.size() < w.off + w.data.size()) img.resize(w.off + w.data.size(), '\0');
      std::memcpy(img.data() + w.off, w.data.data(), w.data.size());
    }
    auto after = DiskWithImage(img);
    EXPECT_EQ(DumpDisk(after), state_a);
    auto report = engine::CheckFile(std::make_unique<testutil::FaultFile>(after), {.verify_data = true});
    ASSERT_TRUE(report.has_value());
    EXPECT_TRUE(report->clean());
    bool said = false;
    for (const FsckFinding& f : report->findings)
      said |= f.kind == FsckFinding::Kind::kWarning && f.what.find("did not reach the disk whole") != std::string::npos;
    EXPECT_TRUE(said);
  }
}

TEST_P(CommitTest, FailedCommitCanBeRetried) {
  std::unique_ptr<Container> c;
  auto disk = DiskWithB(&c);
  disk->crash_after = disk->writes + 3;
  EXPECT_FALSE(c->Commit().ok());
  // The disk comes back (a transient error): the same container commits.
  disk->crash_after = -1;
  disk->crashed = false;
  ASSERT_OK(c->Commit());
  std::string expect = Dump(*c, kRootId, "");
  c.reset();
  EXPECT_EQ(DumpDisk(disk), expect);
}

TEST_P(CommitTest, CommitWithoutChangesWritesNothing) {
  std::unique_ptr<Container> c;
  auto disk = DiskWithB(&c);
  ASSERT_OK(c->Commit());
  int64_t w = disk->writes;
  ASSERT_OK(c->Commit());
  EXPECT_EQ(disk->writes, w);
  EXPECT_FALSE(c->dirty());
}

TEST_P(CommitTest, ManyCommitsKeepTheFileBounded) {
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(Dataset d,
                       c->CreateDataset("/d", {.dtype = DType::kU1, .shape = {64 * 1024}, .chunks = {4096}}));
  std::string v(64 * 1024, 'a');
  for (int i = 0; i < 50; ++i) {
    v[i] = 'b';
    ASSERT_OK(d.WriteElements(0, v.size(), v.data()));
    ASSERT_OK(c->Commit());
  }
  // Copy-on-write needs room for two versions, not fifty.
  EXPECT_LT(disk->current.size(), 3u * 64 * 1024);
}

}  // namespace
}  // namespace slabfs
