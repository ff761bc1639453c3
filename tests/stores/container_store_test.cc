// A slab container read through the store interface (engine/store.cc):
// the same tree, attributes and elements as through Container.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <numeric>

#include "slabfs/store.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs {
namespace {

TEST(ContainerStoreTest, ShowsWhatTheContainerHolds) {
  char tmpl[] = "/tmp/slabfs-cstore-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/c.slab";
  std::vector<int32_t> values(30 * 20);
  std::iota(values.begin(), values.end(), -100);
  {
    ASSERT_OK_AND_ASSIGN(auto c, Container::Open(path, {.create = true}));
    ASSERT_OK(c->MakeGroups("/g"));
    ASSERT_OK_AND_ASSIGN(
        Dataset ds,
        c->CreateDataset("/g/t",
                         {.dtype = DType::kI4, .shape = {30, 20}, .chunks = {8, 8}, .filters = "shuffle,deflate=1"}));
    ASSERT_OK(ds.Write(Slab::Box({0, 0}, {30, 20}), values.data()));
    ASSERT_OK(c->SetAttribute(ds.id(), "units", Attribute::String("K")));
    ASSERT_OK(c->Close());
  }
  ASSERT_OK_AND_ASSIGN(auto store, OpenContainerStore(path));
  EXPECT_EQ(store->format(), "slab");
  EXPECT_TRUE(store->Skipped().empty());
  ASSERT_OK_AND_ASSIGN(ObjectId id, store->Resolve("/g/t"));
  EXPECT_EQ(store->PathOf(id).value(), "/g/t");
  EXPECT_EQ(store->GetAttribute(id, "units").value().ToText(), "K");
  EXPECT_CODE(store->Resolve("/g/nope"), Code::kNotFound);
  ASSERT_OK_AND_ASSIGN(auto ds, store->OpenDataset(id));
  EXPECT_EQ(ds->info().dataset.shape, (Dims{30, 20}));
  EXPECT_EQ(ds->info().source_filters, "shuffle,deflate=1");
  std::vector<int32_t> got(values.size());
  ASSERT_OK(ds->Read(Slab::All({30, 20}), got.data()));
  EXPECT_EQ(got, values);
  std::vector<int32_t> some(50);
  ASSERT_OK(ds->ReadElements(333, 50, some.data()));
  EXPECT_TRUE(std::equal(some.begin(), some.end(), values.begin() + 333));
  ASSERT_OK_AND_ASSIGN(auto chunks, ds->StoredChunks());
  ASSERT_EQ(chunks.size(), 12u);
  EXPECT_TRUE(std::is_sorted(chunks.begin(), chunks.end(),
                             [](const StoredChunk& a, const StoredChunk& b) { return a.coords < b.coords; }));
  std::filesystem::remove_all(tmpl);
}

// A walk over a dataset of 2^50 elements with three chunks stored jumps
// from chunk to chunk (row to row of a chunk here): in windows of 2^22
// elements it would ask 2^28 times.
TEST(ContainerStoreTest, DefinedWalkJumpsOverHoles) {
  char tmpl[] = "/tmp/slabfs-cstore-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/c.slab";
  const uint64_t n = uint64_t{1} << 25;
  {
    ASSERT_OK_AND_ASSIGN(auto c, Container::Open(path, {.create = true}));
    ASSERT_OK_AND_ASSIGN(
        Dataset ds,
        c->CreateDataset("/big", {.dtype = DType::kU1, .shape = {n, n}, .chunks = {64, 64}, .sparse = true}));
    const uint8_t one = 1;
    ASSERT_OK(ds.Write(Slab::Box({5, 7}, {1, 1}), &one));
    ASSERT_OK(ds.Write(Slab::Box({n / 2, n - 3}, {1, 1}), &one));
    ASSERT_OK(ds.Write(Slab::Box({n - 1, n - 1}, {1, 1}), &one));
    ASSERT_OK(c->Close());
  }
  ASSERT_OK_AND_ASSIGN(auto store, OpenContainerStore(path));
  ASSERT_OK_AND_ASSIGN(auto ds, store->OpenDataset(std::string_view("/big")));
  std::vector<ElementRun> runs;
  int checks = 0;
  ASSERT_OK(ds->ForEachDefinedRun(
      0, n * n,
      [&](const ElementRun& r) {
        runs.push_back(r);
        return true;
      },
      [&] {
        ++checks;
        return Status::OK();
      }));
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].first, 5 * n + 7);
  EXPECT_EQ(runs[1].first, (n / 2) * n + n - 3);
  EXPECT_EQ(runs[2].first, n * n - 1);
  for (const ElementRun& r : runs) EXPECT_EQ(r.count, 1u);
  // A sparse dataset's defined elements: the three written.
  EXPECT_EQ(ds->CountDefined().value(), 3u);
  // A step per row of each stored chunk at most (a row of 2^25 elements is
  // longer than a step's window), not one per window of the hole.
  EXPECT_LE(checks, 3 * 64 + 1);
  // From past the last defined element: nothing, at once.
  runs.clear();
  ASSERT_OK(ds->ForEachDefinedRun(n * n - 1 - n, n, [&](const ElementRun& r) {
    runs.push_back(r);
    return true;
  }));
  EXPECT_TRUE(runs.empty());
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace slabfs
