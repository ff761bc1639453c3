// The single and compact index kinds, whose records live in the dataset
// header: against a reference map under random put, remove and reopen from
// the encoded root; root round trips, truncation at every length and
// hostile roots; no block is ever written.
#include "engine/index/header_index.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "engine/format/layout.h"
#include "engine/util/coding.h"
#include "tests/testutil/fault_file.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::engine {
namespace {

class HeaderIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    alloc_.Reset(kDataStart, {});
    data_ = alloc_.Allocate(1 << 20, 4096);
    alloc_.MarkDurable();
  }

  static IndexGeometry Geo(Dims max_grid, bool filtered = false) {
    IndexGeometry g;
    g.max_grid = std::move(max_grid);
    g.filtered = filtered;
    g.max_chunk_bytes = 1 << 16;
    return g;
  }

  std::shared_ptr<testutil::Disk> disk_ = std::make_shared<testutil::Disk>();
  testutil::FaultFile file_{disk_};
  Allocator alloc_;
  BlockStore store_{&file_, &alloc_};
  uint64_t data_ = 0;
};

TEST_F(HeaderIndexTest, SingleHoldsOneRecordInItsRoot) {
  const IndexGeometry g = Geo({1, 1});
  ASSERT_OK_AND_ASSIGN(auto idx, HeaderIndex::Open(IndexKind::kSingle, g, "", &store_, "d"));
  const uint64_t zero[2] = {0, 0}, one[2] = {0, 1};
  ASSERT_OK_AND_ASSIGN(ChunkRecord r, idx->Get(ChunkCoord(zero, 2)));
  EXPECT_FALSE(r.allocated());
  EXPECT_EQ(idx->EncodeRoot(), "");
  EXPECT_CODE(idx->Get(ChunkCoord(one, 2)), Code::kInvalidArgument);
  EXPECT_CODE(idx->Put(ChunkCoord(one, 2), {data_}), Code::kInvalidArgument);
  ASSERT_OK(idx->Put(ChunkCoord(zero, 2), {data_ + 64}));
  EXPECT_TRUE(idx->dirty());
  ASSERT_OK(idx->Flush());
  EXPECT_FALSE(idx->dirty());
  EXPECT_EQ(idx->EncodeRoot().size(), 8u);
  EXPECT_EQ(idx->disk_bytes(), 0u);
  EXPECT_TRUE(disk_->unsynced.empty());  // nothing but the header changes
  ASSERT_OK_AND_ASSIGN(auto again, HeaderIndex::Open(IndexKind::kSingle, g, idx->EncodeRoot(), &store_, "d"));
  ASSERT_OK_AND_ASSIGN(r, again->Get(ChunkCoord(zero, 2)));
  EXPECT_EQ(r.addr, data_ + 64);
  ASSERT_OK(again->Put(ChunkCoord(zero, 2), {}));
  EXPECT_EQ(again->EncodeRoot(), "");
}

TEST_F(HeaderIndexTest, OpenRefusesGeometriesThatDoNotFit) {
  EXPECT_CODE(HeaderIndex::Open(IndexKind::kSingle, Geo({2}), "", &store_, "d"), Code::kCorruption);
  EXPECT_CODE(HeaderIndex::Open(IndexKind::kSingle, Geo({kUnlimited}), "", &store_, "d"), Code::kCorruption);
  EXPECT_CODE(HeaderIndex::Open(IndexKind::kCompact, Geo({65}), "", &store_, "d"), Code::kCorruption);
  EXPECT_CODE(HeaderIndex::Open(IndexKind::kCompact, Geo({8, kUnlimited}), "", &store_, "d"), Code::kCorruption);
  EXPECT_CODE(HeaderIndex::Open(IndexKind::kCompact, Geo({0}), "", &store_, "d"), Code::kCorruption);
  ASSERT_OK(HeaderIndex::Open(IndexKind::kCompact, Geo({8, 8}), "", &store_, "d"));
}

class CompactReferenceTest : public HeaderIndexTest, public ::testing::WithParamInterface<bool> {};

TEST_P(CompactReferenceTest, MatchesAReferenceMapAcrossReopens) {
  const bool filtered = GetParam();
  const IndexGeometry g = Geo({4, 3, 5}, filtered);  // 60 chunks
  std::map<uint64_t, ChunkRecord> ref;
  std::mt19937_64 rng(filtered ? 7 : 3);
  ASSERT_OK_AND_ASSIGN(auto idx, HeaderIndex::Open(IndexKind::kCompact, g, "", &store_, "d"));
  for (int step = 0; step < 3000; ++step) {
    uint64_t c[3] = {rng() % 4, rng() % 3, rng() % 5};
    const uint64_t pos = (c[0] * 3 + c[1]) * 5 + c[2];
    switch (rng() % 5) {
      case 0:
      case 1: {
        ChunkRecord r{data_ + 64 * (rng() % 1000)};
        if (filtered) {
          r.size = static_cast<uint32_t>(1 + rng() % 4096);
          r.filter_mask = static_cast<uint32_t>(rng() % 4);
        }
        ASSERT_OK(idx->Put(ChunkCoord(c, 3), r));
        ref[pos] = r;
        break;
      }
      case 2:
        ASSERT_OK(idx->Put(ChunkCoord(c, 3), {}));
        ref.erase(pos);
        break;
      case 3: {
        ASSERT_OK_AND_ASSIGN(ChunkRecord r, idx->Get(ChunkCoord(c, 3)));
        auto it = ref.find(pos);
        EXPECT_EQ(r, it == ref.end() ? ChunkRecord{} : it->second);
        break;
      }
      default: {
        ASSERT_OK(idx->Flush());
        std::string root = idx->EncodeRoot();
        EXPECT_EQ(root.size(), ref.empty() ? 0 : 2 + ref.size() * (2 + RecordBytes(filtered)));
        ASSERT_OK_AND_ASSIGN(idx, HeaderIndex::Open(IndexKind::kCompact, g, root, &store_, "d"));
        // Everything, in C order, through a full range scan.
        std::map<uint64_t, ChunkRecord> seen;
        ASSERT_OK(idx->ForEach([&](ChunkCoord k, const ChunkRecord& r) {
          seen[(k[0] * 3 + k[1]) * 5 + k[2]] = r;
          return Status::OK();
        }));
        EXPECT_EQ(seen, ref);
        // A box: c[1] == 1, c[2] in [2, 5).
        const uint64_t lo[3] = {0, 1, 2}, hi[3] = {kUnlimited, 2, 5};
        size_t want = 0, got = 0;
        for (auto& [p, r] : ref) want += (p / 5) % 3 == 1 && p % 5 >= 2;
        ASSERT_OK(idx->ForEachIn(ChunkCoord(lo, 3), ChunkCoord(hi, 3), [&](ChunkCoord k, const ChunkRecord&) {
          EXPECT_EQ(k[1], 1u);
          EXPECT_GE(k[2], 2u);
          ++got;
          return Status::OK();
        }));
        EXPECT_EQ(got, want);
      }
    }
  }
  ASSERT_OK(idx->Destroy());
  EXPECT_EQ(idx->EncodeRoot(), "");
  EXPECT_TRUE(disk_->unsynced.empty());
}

INSTANTIATE_TEST_SUITE_P(Records, CompactReferenceTest, ::testing::Bool());

TEST_F(HeaderIndexTest, EveryTruncatedRootIsCorruption) {
  const IndexGeometry g = Geo({10});
  ASSERT_OK_AND_ASSIGN(auto idx, HeaderIndex::Open(IndexKind::kCompact, g, "", &store_, "d"));
  for (uint64_t i : {1, 4, 9}) ASSERT_OK(idx->Put(ChunkCoord(&i, 1), {data_ + 64 * i}));
  const std::string root = idx->EncodeRoot();
  for (size_t n = 1; n < root.size(); ++n) {
    SCOPED_TRACE(n);
    EXPECT_CODE(HeaderIndex::Open(IndexKind::kCompact, g, root.substr(0, n), &store_, "d"), Code::kCorruption);
  }
  EXPECT_CODE(HeaderIndex::Open(IndexKind::kCompact, g, root + "x", &store_, "d"), Code::kCorruption);
  ASSERT_OK(HeaderIndex::Open(IndexKind::kCompact, g, root, &store_, "d"));
}

TEST_F(HeaderIndexTest, HostileRootsAreCorruption) {
  const IndexGeometry g = Geo({10});
  auto compact = [](std::initializer_list<std::pair<uint16_t, uint64_t>> recs, int count = -1) {
    std::string s;
    PutU16(&s, static_cast<uint16_t>(count < 0 ? recs.size() : count));
    for (auto [pos, addr] : recs) {
      PutU16(&s, pos);
      PutU64(&s, addr);
    }
    return s;
  };
  const uint64_t end = alloc_.file_end();
  const std::string bad[] = {
      compact({}, 0),                          // count 0 (an empty index has an empty root)
      compact({{1, data_}}, 11),               // more records than chunks
      compact({{10, data_}}),                  // position outside the grid
      compact({{3, data_}, {3, data_ + 64}}),  // repeated position
      compact({{5, data_}, {2, data_ + 64}}),  // out of order
      compact({{1, 0}}),                       // an unallocated record
      compact({{1, 100}}),                     // inside the superblock area
      compact({{1, end}}),                     // past the end of the file
  };
  for (const std::string& root : bad)
    EXPECT_CODE(HeaderIndex::Open(IndexKind::kCompact, g, root, &store_, "d"), Code::kCorruption);
  std::string zero_single;
  PutU64(&zero_single, 0);
  EXPECT_CODE(HeaderIndex::Open(IndexKind::kSingle, Geo({1}), zero_single, &store_, "d"), Code::kCorruption);
  // A filtered record claiming more than a chunk can hold.
  std::string big;
  PutU64(&big, data_);
  PutU32(&big, (1 << 16) + 1);
  PutU32(&big, 0);
  EXPECT_CODE(HeaderIndex::Open(IndexKind::kSingle, Geo({1}, true), big, &store_, "d"), Code::kCorruption);
  // An unfiltered dataset's record has no size.
  EXPECT_CODE(HeaderIndex::Open(IndexKind::kSingle, Geo({1}), big, &store_, "d"), Code::kCorruption);
}

}  // namespace
}  // namespace slabfs::engine
