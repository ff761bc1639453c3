// Free-list deltas (format/free_list.h): round trip with padding, hostile
// payloads (bad depth, a missing previous block, unknown ops, counts past
// the end, truncation and flips), and FreeExtentSet applying removals that
// cut extents and additions that must not overlap.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/format/block.h"
#include "engine/format/free_list.h"
#include "engine/format/layout.h"
#include "engine/util/coding.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::engine {
namespace {

constexpr uint64_t kEnd = kDataStart + (1 << 20);

FreeListDelta Sample() {
  FreeListDelta d;
  d.prev = {kDataStart + 4096, 64};
  d.depth = 3;
  d.changes = {{kDataStart + 8192, 100, 0, 0, false},
               {kDataStart + 16384, 4096, 7, 1700000000, true},
               {kDataStart, 64, 0, 0, true}};
  return d;
}

TEST(FreeListDeltaTest, RoundTripsWithPadding) {
  const FreeListDelta d = Sample();
  for (size_t slots : {3u, 4u, 20u}) {
    std::string payload = EncodeFreeListDelta(d, slots);
    EXPECT_EQ(payload.size(), FreeListDeltaPayloadBytes(slots));
    ASSERT_OK_AND_ASSIGN(FreeListDelta back, DecodeFreeListDelta(payload, kEnd, 8));
    EXPECT_EQ(back.prev, d.prev);
    EXPECT_EQ(back.depth, d.depth);
    EXPECT_EQ(back.changes, d.changes);
  }
}

TEST(FreeListDeltaTest, RoundTripsInsideABlockAndRejectsEveryFlip) {
  std::string image = EncodeBlock(BlockType::kFreeListDelta, EncodeFreeListDelta(Sample(), 4));
  ASSERT_OK_AND_ASSIGN(std::string_view payload, DecodeBlock(image, BlockType::kFreeListDelta, "delta"));
  ASSERT_OK(DecodeFreeListDelta(payload, kEnd, 8));
  for (size_t i = 0; i < image.size(); ++i) {
    std::string bad = image;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    EXPECT_FALSE(DecodeBlock(bad, BlockType::kFreeListDelta, "delta").has_value()) << "byte " << i;
  }
}

TEST(FreeListDeltaTest, RejectsTruncationAtEveryLength) {
  const std::string payload = EncodeFreeListDelta(Sample(), 3);
  for (size_t n = 0; n < payload.size(); ++n) {
    auto d = DecodeFreeListDelta(payload.substr(0, n), kEnd, 8);
    EXPECT_FALSE(d.has_value()) << n;
  }
}

TEST(FreeListDeltaTest, RejectsHostileHeadersAndEntries) {
  auto decode = [](const FreeListDelta& d) {
    return DecodeFreeListDelta(EncodeFreeListDelta(d, d.changes.size()), kEnd, 8);
  };
  FreeListDelta d = Sample();
  d.depth = 0;
  EXPECT_CODE(decode(d), Code::kCorruption);
  d.depth = kMaxFreeListDepth + 1;
  EXPECT_CODE(decode(d), Code::kCorruption);
  d = Sample();
  d.prev = {};
  EXPECT_CODE(decode(d), Code::kCorruption);  // a delta always has a previous block
  d.prev = {kEnd, 64};
  EXPECT_CODE(decode(d), Code::kCorruption);  // previous block past the end
  d = Sample();
  d.changes[1].generation = 8;
  EXPECT_CODE(decode(d), Code::kCorruption);  // freed by a later commit
  d = Sample();
  d.changes[1].time = -1;
  EXPECT_CODE(decode(d), Code::kCorruption);
  d = Sample();
  d.changes[0].addr = 8;  // inside the superblocks
  EXPECT_CODE(decode(d), Code::kCorruption);
  d = Sample();
  d.changes[0].len = UINT64_MAX;
  EXPECT_CODE(decode(d), Code::kCorruption);  // wraps around

  // An unknown op, a count past the end, trailing bytes.
  std::string payload = EncodeFreeListDelta(Sample(), 3);
  std::string bad = payload;
  bad[24 + 32] = 2;  // the first entry's op
  EXPECT_CODE(DecodeFreeListDelta(bad, kEnd, 8), Code::kCorruption);
  bad = payload;
  bad[16] = 4;  // count 4 of 3 entries
  EXPECT_CODE(DecodeFreeListDelta(bad, kEnd, 8), Code::kCorruption);
  EXPECT_CODE(DecodeFreeListDelta(payload + std::string(8, '\0'), kEnd, 8), Code::kCorruption);
  // A removal carrying a generation is not one this format writes.
  d = Sample();
  std::string raw = EncodeFreeListDelta(d, 3);
  StoreU64(raw.data() + 24 + 16, 5);  // first entry (a removal): generation 5
  EXPECT_CODE(DecodeFreeListDelta(raw, kEnd, 8), Code::kCorruption);
}

TEST(FreeExtentSetTest, RemovalsCutExtentsAndAdditionsFillThem) {
  FreeExtentSet set({{kDataStart, 1000, 0, 0}, {kDataStart + 2000, 1000, 3, 9}});
  ASSERT_OK(set.Apply({kDataStart + 100, 100, 0, 0, false}));   // a hole in the first
  ASSERT_OK(set.Apply({kDataStart + 900, 1200, 0, 0, false}));  // the first's tail and the second's head
  ASSERT_OK(set.Apply({kDataStart + 5000, 10, 0, 0, false}));   // nothing there: no change
  std::vector<FreedExtent> want = {
      {kDataStart, 100, 0, 0}, {kDataStart + 200, 700, 0, 0}, {kDataStart + 2100, 900, 3, 9}};
  EXPECT_EQ(set.Extents(), want);
  ASSERT_OK(set.Apply({kDataStart + 100, 100, 0, 0, true}));  // back, same tags: merges
  want = {{kDataStart, 900, 0, 0}, {kDataStart + 2100, 900, 3, 9}};
  EXPECT_EQ(set.Extents(), want);
  // An addition overlapping a free extent at either end, or inside it.
  EXPECT_CODE(set.Apply({kDataStart + 850, 100, 0, 0, true}), Code::kCorruption);
  EXPECT_CODE(set.Apply({kDataStart + 2000, 200, 0, 0, true}), Code::kCorruption);
  EXPECT_CODE(set.Apply({kDataStart + 2500, 1, 0, 0, true}), Code::kCorruption);
  ASSERT_OK(set.Apply({kDataStart + 900, 1200, 4, 10, true}));  // exactly the gap
  ASSERT_OK(set.CheckBounds(kDataStart + 3000));
  EXPECT_CODE(set.CheckBounds(kDataStart + 2999), Code::kCorruption);
}

}  // namespace
}  // namespace slabfs::engine
