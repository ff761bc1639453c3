// The free-list block: round trip with padding and with freed generations,
// version 1 payloads, truncation at every length, flips inside its block,
// and hostile payloads (bad counts, unsorted, overlapping or out-of-bounds
// extents, trailing bytes, generations from the future).
#include "engine/format/free_list.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "engine/format/block.h"
#include "engine/format/layout.h"
#include "engine/util/coding.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::engine {
namespace {
namespace free_list_test {  // its own names in a unity batch

constexpr uint64_t kEnd = kDataStart + (1 << 20);

// A payload written field by field: u64 count, then (addr, len) pairs, and
// in version 2 each pair followed by its generation and time.
std::string RawFreeList(uint64_t count, const std::vector<FreedExtent>& entries, int version = 2) {
  std::string s;
  PutU64(&s, count);
  for (const auto& e : entries) {
    PutU64(&s, e.addr);
    PutU64(&s, e.len);
    if (version == 2) {
      PutU64(&s, e.generation);
      PutU64(&s, static_cast<uint64_t>(e.time));
    }
  }
  return s;
}

std::vector<FreedExtent> Sample() {
  return {{kDataStart, 64},
          {kDataStart + 64, 100},  // adjacent entries are fine
          {kDataStart + 4096, 4096, 7, 1700000000},
          {kEnd - 10, 10, 9, 1700000100}};
}

TEST(FreeListTest, RoundTripsExtents) {
  std::vector<FreedExtent> e = Sample();
  std::string p = EncodeFreeList(e, e.size());
  EXPECT_EQ(p.size(), FreeListPayloadBytes(e.size()));
  ASSERT_OK_AND_ASSIGN(auto back, DecodeFreeList(p, kEnd));
  EXPECT_EQ(back, e);
}

TEST(FreeListTest, RoundTripsWithPaddingSlots) {
  std::vector<FreedExtent> e = Sample();
  for (size_t slots : {e.size() + 1, e.size() + 17}) {
    std::string p = EncodeFreeList(e, slots);
    EXPECT_EQ(p.size(), FreeListPayloadBytes(slots));
    EXPECT_EQ(LoadU64(p.data()), slots);
    ASSERT_OK_AND_ASSIGN(auto back, DecodeFreeList(p, kEnd));
    EXPECT_EQ(back, e);
  }
}

TEST(FreeListTest, RoundTripsEmptyList) {
  for (size_t slots : {0, 3}) {
    std::string p = EncodeFreeList({}, slots);
    EXPECT_EQ(p.size(), FreeListPayloadBytes(slots));
    ASSERT_OK_AND_ASSIGN(auto back, DecodeFreeList(p, kDataStart));
    EXPECT_TRUE(back.empty());
  }
  EXPECT_EQ(FreeListPayloadBytes(0), 8u);
  EXPECT_EQ(FreeListPayloadBytes(5), 168u);
}

TEST(FreeListTest, RoundTripsInsideABlock) {
  std::vector<FreedExtent> e = Sample();
  std::string image = EncodeBlock(BlockType::kFreeList, EncodeFreeList(e, 10));
  ASSERT_OK_AND_ASSIGN(std::string_view payload, DecodeBlock(image, BlockType::kFreeList, "free list"));
  ASSERT_OK_AND_ASSIGN(auto back, DecodeFreeList(payload, kEnd));
  EXPECT_EQ(back, e);
}

TEST(FreeListTest, SkipsPaddingEntriesAnywhere) {
  // len 0 entries are padding, whatever their address.
  std::string p = RawFreeList(4, {{0, 0}, {kDataStart + 100, 10}, {5, 0}, {kDataStart + 200, 10}});
  ASSERT_OK_AND_ASSIGN(auto back, DecodeFreeList(p, kEnd));
  EXPECT_EQ(back, (std::vector<FreedExtent>{{kDataStart + 100, 10}, {kDataStart + 200, 10}}));
}

TEST(FreeListTest, RejectsTruncatedPayloadAtEveryLength) {
  std::vector<FreedExtent> e = Sample();
  std::string p = EncodeFreeList(e, e.size() + 2);
  for (size_t n = 0; n < p.size(); ++n) {
    SCOPED_TRACE(n);
    EXPECT_CODE(DecodeFreeList(std::string_view(p).substr(0, n), kEnd), Code::kCorruption);
  }
}

TEST(FreeListTest, RejectsEveryByteFlipInItsBlock) {
  std::vector<FreedExtent> e = Sample();
  const std::string good = EncodeBlock(BlockType::kFreeList, EncodeFreeList(e, e.size()));
  for (size_t i = 0; i < good.size(); ++i) {
    std::string image = good;
    image[i] = static_cast<char>(image[i] ^ 0x5a);
    SCOPED_TRACE(i);
    EXPECT_CODE(DecodeBlock(image, BlockType::kFreeList, "free list"), Code::kCorruption);
  }
}

TEST(FreeListTest, RejectsCountsThatExceedTheRemainingBytes) {
  std::vector<FreedExtent> e = Sample();
  for (uint64_t count : {e.size() + 1, e.size() + 1000, uint64_t{1} << 60, std::numeric_limits<uint64_t>::max()}) {
    SCOPED_TRACE(count);
    EXPECT_CODE(DecodeFreeList(RawFreeList(count, e), kEnd), Code::kCorruption);
  }
}

TEST(FreeListTest, RejectsTrailingBytes) {
  std::vector<FreedExtent> e = Sample();
  // A count smaller than the entries present.
  EXPECT_CODE(DecodeFreeList(RawFreeList(e.size() - 1, e), kEnd), Code::kCorruption);
  EXPECT_CODE(DecodeFreeList(RawFreeList(0, e), kEnd), Code::kCorruption);
  // Bytes that are not a whole entry.
  for (size_t extra : {1, 8, 15}) {
    std::string p = EncodeFreeList(e, e.size());
    p.append(extra, '\0');
    SCOPED_TRACE(extra);
    EXPECT_CODE(DecodeFreeList(p, kEnd), Code::kCorruption);
  }
}

TEST(FreeListTest, RejectsUnsortedExtents) {
  std::vector<FreedExtent> e = {{kDataStart + 4096, 10}, {kDataStart, 10}};
  EXPECT_CODE(DecodeFreeList(RawFreeList(2, e), kEnd), Code::kCorruption);
}

TEST(FreeListTest, RejectsOverlappingAndDuplicateExtents) {
  const std::vector<std::vector<FreedExtent>> bad = {
      {{kDataStart, 100}, {kDataStart + 99, 10}},      // overlap by one byte
      {{kDataStart, 100}, {kDataStart + 50, 10}},      // nested
      {{kDataStart + 64, 10}, {kDataStart + 64, 10}},  // duplicate
      {{kDataStart, 100}, {kDataStart + 200, 10}, {kDataStart + 150, 100}},
  };
  for (const auto& e : bad) EXPECT_CODE(DecodeFreeList(RawFreeList(e.size(), e), kEnd), Code::kCorruption);
}

TEST(FreeListTest, RejectsExtentsOutOfBounds) {
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  const std::vector<FreedExtent> bad = {
      {0, 16},               // the superblock slots
      {kDataStart - 1, 16},  // one byte before the data area
      {kEnd - 9, 10},        // one byte past file_end
      {kEnd, 1},
      {kEnd + 4096, 4096},
      {kDataStart, max},  // addr + len wraps around
      {max, 1},
      {kEnd - 1, max},
  };
  for (const FreedExtent& x : bad) {
    SCOPED_TRACE(std::to_string(x.addr) + "+" + std::to_string(x.len));
    EXPECT_CODE(DecodeFreeList(RawFreeList(1, {x}), kEnd), Code::kCorruption);
    // Also after a valid entry.
    EXPECT_CODE(DecodeFreeList(RawFreeList(2, {{kDataStart, 1}, x}), kEnd), Code::kCorruption);
  }
}

TEST(FreeListTest, AcceptsExtentEndingExactlyAtFileEnd) {
  ASSERT_OK_AND_ASSIGN(auto back, DecodeFreeList(RawFreeList(1, {{kDataStart, kEnd - kDataStart}}), kEnd));
  EXPECT_EQ(back, (std::vector<FreedExtent>{{kDataStart, kEnd - kDataStart}}));
}

TEST(FreeListTest, DecodesVersionOnePayloadsAsFreeForEveryone) {
  const std::vector<FreedExtent> e = {{kDataStart, 64}, {kDataStart + 4096, 4096}};
  const std::string image = EncodeBlock(BlockType::kFreeList, RawFreeList(e.size(), e, 1), 1);
  uint8_t version = 0;
  ASSERT_OK_AND_ASSIGN(std::string_view payload, DecodeBlock(image, BlockType::kFreeList, "free list", &version));
  EXPECT_EQ(version, 1);
  ASSERT_OK_AND_ASSIGN(auto back, DecodeFreeList(payload, kEnd, version));
  EXPECT_EQ(back, e);  // generation and time 0
  // The same bytes read as version 2 are a different, shorter list.
  EXPECT_CODE(DecodeFreeList(payload, kEnd, 2), Code::kCorruption);
}

TEST(FreeListTest, KeepsGenerationsAndTimesThroughItsBlock) {
  const std::vector<FreedExtent> e = Sample();
  const std::string image = EncodeBlock(BlockType::kFreeList, EncodeFreeList(e, e.size() + 1), kFreeListVersion);
  uint8_t version = 0;
  ASSERT_OK_AND_ASSIGN(std::string_view payload, DecodeBlock(image, BlockType::kFreeList, "free list", &version));
  EXPECT_EQ(version, kFreeListVersion);
  ASSERT_OK_AND_ASSIGN(auto back, DecodeFreeList(payload, kEnd, version, 10));
  EXPECT_EQ(back, e);
}

TEST(FreeListTest, RejectsUnknownVersions) {
  const std::string payload = EncodeFreeList(Sample(), 4);
  for (uint8_t v : {0, 3, 255}) {
    SCOPED_TRACE(v);
    EXPECT_CODE(DecodeFreeList(payload, kEnd, v), Code::kCorruption);
    EXPECT_CODE(DecodeBlock(EncodeBlock(BlockType::kFreeList, payload, v), BlockType::kFreeList, "free list"),
                Code::kCorruption);
  }
  // Version 2 does not exist for every type (BlockTest checks which).
  EXPECT_CODE(DecodeBlock(EncodeBlock(BlockType::kBTreeLeaf, "x", 2), BlockType::kBTreeLeaf, "leaf"),
              Code::kCorruption);
}

TEST(FreeListTest, RejectsExtentsFreedByALaterCommitOrAtANegativeTime) {
  // The list of the state of generation 9 names extents freed by commits up
  // to 9.
  EXPECT_OK(DecodeFreeList(RawFreeList(1, {{kDataStart, 10, 9, 5}}), kEnd, 2, 10));
  EXPECT_CODE(DecodeFreeList(RawFreeList(1, {{kDataStart, 10, 10, 5}}), kEnd, 2, 10), Code::kCorruption);
  EXPECT_CODE(DecodeFreeList(RawFreeList(1, {{kDataStart, 10, UINT64_MAX, 5}}), kEnd, 2, 10), Code::kCorruption);
  EXPECT_CODE(DecodeFreeList(RawFreeList(1, {{kDataStart, 10, 3, -1}}), kEnd, 2, 10), Code::kCorruption);
}

}  // namespace free_list_test
}  // namespace
}  // namespace slabfs::engine
