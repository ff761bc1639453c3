// Metadata block framing: round trip, truncation at every length, single
// bit and byte flips, hostile headers with a valid checksum, and the bounds
// checks on block references.
#include "engine/format/block.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include "engine/format/layout.h"
#include "engine/util/coding.h"
#include "engine/util/crc32c.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::engine {
namespace {

constexpr BlockType kAllTypes[] = {BlockType::kGroup, BlockType::kDataset, BlockType::kFixedArrayLeaf,
                                   BlockType::kFixedArrayNode, BlockType::kFreeList};

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

// Recomputes the header checksum over the (possibly edited) header and payload.
void Reseal(std::string* image) {
  uint32_t crc = Crc32c(image->data(), 12);
  crc = Crc32c(crc, image->data() + kBlockHeaderBytes, image->size() - kBlockHeaderBytes);
  StoreU32(image->data() + 12, crc);
}

TEST(BlockTest, RoundTripsPayloadsOfEveryType) {
  for (BlockType t : kAllTypes) {
    for (size_t n : {0, 1, 15, 16, 17, 1000, 70000}) {
      SCOPED_TRACE(std::string(BlockTypeName(t)) + " " + std::to_string(n));
      std::string payload = RandomBytes(n, n * 31 + static_cast<int>(t));
      std::string image = EncodeBlock(t, payload);
      ASSERT_EQ(image.size(), kBlockHeaderBytes + n);
      ASSERT_OK_AND_ASSIGN(std::string_view back, DecodeBlock(image, t, "test block"));
      EXPECT_EQ(back, payload);
      // The payload is a view into the image, not a copy.
      EXPECT_EQ(back.data(), image.data() + kBlockHeaderBytes);
    }
  }
}

TEST(BlockTest, HeaderHasTheDocumentedLayout) {
  std::string payload = "payload!";
  std::string image = EncodeBlock(BlockType::kFreeList, payload);
  EXPECT_EQ(image.substr(0, 4), "SLBK");
  EXPECT_EQ(LoadU32(image.data()), kBlockMagic);
  EXPECT_EQ(static_cast<uint8_t>(image[4]), static_cast<uint8_t>(BlockType::kFreeList));
  EXPECT_EQ(static_cast<uint8_t>(image[5]), 1);
  EXPECT_EQ(image[6], '\0');
  EXPECT_EQ(image[7], '\0');
  EXPECT_EQ(LoadU32(image.data() + 8), payload.size());
  uint32_t crc = Crc32c(Crc32c(image.data(), 12), payload.data(), payload.size());
  EXPECT_EQ(LoadU32(image.data() + 12), crc);
  EXPECT_EQ(image.substr(16), payload);
}

TEST(BlockTest, RejectsTruncatedBlockAtEveryLength) {
  for (size_t n : {0, 1, 300}) {
    std::string image = EncodeBlock(BlockType::kDataset, RandomBytes(n, n));
    for (size_t len = 0; len < image.size(); ++len) {
      SCOPED_TRACE(std::to_string(n) + " truncated to " + std::to_string(len));
      EXPECT_CODE(DecodeBlock(std::string_view(image).substr(0, len), BlockType::kDataset, "t"), Code::kCorruption);
    }
  }
}

TEST(BlockTest, RejectsTrailingBytesAfterThePayload) {
  std::string image = EncodeBlock(BlockType::kGroup, "abc");
  image.push_back('\0');
  EXPECT_CODE(DecodeBlock(image, BlockType::kGroup, "t"), Code::kCorruption);
}

TEST(BlockTest, RejectsEverySingleBitFlip) {
  const std::string good = EncodeBlock(BlockType::kFixedArrayNode, RandomBytes(40, 7));
  for (size_t i = 0; i < good.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string image = good;
      image[i] = static_cast<char>(image[i] ^ (1 << bit));
      SCOPED_TRACE("byte " + std::to_string(i) + " bit " + std::to_string(bit));
      EXPECT_CODE(DecodeBlock(image, BlockType::kFixedArrayNode, "t"), Code::kCorruption);
    }
  }
}

TEST(BlockTest, RejectsEverySingleByteChange) {
  const std::string good = EncodeBlock(BlockType::kFixedArrayLeaf, RandomBytes(4108, 8));
  std::mt19937_64 rng(99);
  for (size_t i = 0; i < good.size(); ++i) {
    std::string image = good;
    // Any non-zero xor: a random byte value change, not only one bit.
    image[i] = static_cast<char>(image[i] ^ static_cast<char>(1 + rng() % 255));
    SCOPED_TRACE(i);
    EXPECT_CODE(DecodeBlock(image, BlockType::kFixedArrayLeaf, "t"), Code::kCorruption);
  }
}

TEST(BlockTest, RejectsBlockOfAnotherType) {
  for (BlockType stored : kAllTypes) {
    std::string image = EncodeBlock(stored, "x");
    for (BlockType wanted : kAllTypes) {
      auto r = DecodeBlock(image, wanted, "t");
      if (stored == wanted)
        EXPECT_OK(r);
      else
        EXPECT_CODE(r, Code::kCorruption);
    }
  }
}

TEST(BlockTest, RejectsUnknownVersionWithValidChecksum) {
  for (uint8_t v : {0, 4, 255}) {
    std::string image = EncodeBlock(BlockType::kGroup, "payload");
    image[5] = static_cast<char>(v);
    Reseal(&image);
    SCOPED_TRACE(static_cast<int>(v));
    EXPECT_CODE(DecodeBlock(image, BlockType::kGroup, "t"), Code::kCorruption);
  }
}

TEST(BlockTest, LaterVersionsExistOnlyForFreeListsDatasetsAndGroups) {
  for (uint8_t t = 1; t <= static_cast<uint8_t>(BlockType::kGroupPageTable); ++t) {
    const auto type = static_cast<BlockType>(t);
    uint8_t max = 1;
    if (type == BlockType::kGroup) max = 3;
    if (type == BlockType::kFreeList || type == BlockType::kDataset) max = 2;
    SCOPED_TRACE(BlockTypeName(type));
    EXPECT_EQ(MaxBlockVersion(type), max);
    for (uint8_t v = 2; v <= 4; ++v) {
      auto r = DecodeBlock(EncodeBlock(type, "x", v), type, "t");
      EXPECT_EQ(r.has_value(), v <= max) << "version " << int{v};
    }
  }
}

TEST(BlockTest, RejectsBadMagicWithValidChecksum) {
  std::string image = EncodeBlock(BlockType::kGroup, "payload");
  image[0] = 'X';
  Reseal(&image);
  EXPECT_CODE(DecodeBlock(image, BlockType::kGroup, "t"), Code::kCorruption);
}

TEST(BlockTest, RejectsLengthFieldThatDisagreesWithTheImage) {
  for (uint32_t len : {0u, 6u, 8u, 0xffffffffu}) {
    std::string image = EncodeBlock(BlockType::kDataset, "payload");  // 7 bytes
    StoreU32(image.data() + 8, len);
    Reseal(&image);
    SCOPED_TRACE(len);
    EXPECT_CODE(DecodeBlock(image, BlockType::kDataset, "t"), Code::kCorruption);
  }
}

TEST(BlockTest, CorruptionMessageNamesTheBlock) {
  std::string image = EncodeBlock(BlockType::kDataset, "payload");
  image.back() ^= 1;
  auto r = DecodeBlock(image, BlockType::kDataset, "dataset /a/b");
  ASSERT_CODE(r, Code::kCorruption);
  EXPECT_NE(r.error().message().find("dataset /a/b"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("checksum"), std::string::npos) << r.error().message();
}

TEST(BlockTest, NamesEveryType) {
  EXPECT_EQ(BlockTypeName(BlockType::kGroup), "group");
  EXPECT_EQ(BlockTypeName(BlockType::kDataset), "dataset");
  EXPECT_EQ(BlockTypeName(BlockType::kFixedArrayLeaf), "fixed-array leaf");
  EXPECT_EQ(BlockTypeName(BlockType::kFixedArrayNode), "fixed-array node");
  EXPECT_EQ(BlockTypeName(BlockType::kFreeList), "free list");
  EXPECT_EQ(BlockTypeName(static_cast<BlockType>(99)), "unknown");
}

TEST(BlockRefTest, AcceptsEmptyRefAndRefsInsideTheFile) {
  const uint64_t end = kDataStart + 10000;
  EXPECT_OK(CheckBlockRef({}, end, "r"));
  EXPECT_TRUE(BlockRef{}.empty());
  EXPECT_OK(CheckBlockRef({kDataStart, 16}, end, "r"));
  EXPECT_OK(CheckBlockRef({kDataStart, 10000}, end, "r"));
  EXPECT_OK(CheckBlockRef({end - 16, 16}, end, "r"));
  EXPECT_OK(CheckBlockRef({kDataStart, static_cast<uint32_t>(kMaxBlockBytes)}, kDataStart + kMaxBlockBytes, "r"));
}

TEST(BlockRefTest, RejectsRefsOutOfBounds) {
  const uint64_t end = kDataStart + 10000;
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  const BlockRef bad[] = {
      {0, 16},  // a length without an address
      {1, 16},  // inside the superblock slots
      {kDataStart - 1, 16},
      {kDataStart, 0},
      {kDataStart, 15},  // shorter than a header
      {end - 15, 16},    // one byte past file_end
      {end, 16},
      {end + 1, 16},
      {max - 15, 32},  // addr + len wraps around
      {max, 0xffffffffu},
  };
  for (const BlockRef& ref : bad) {
    SCOPED_TRACE(std::to_string(ref.addr) + "+" + std::to_string(ref.len));
    EXPECT_CODE(CheckBlockRef(ref, end, "my ref"), Code::kCorruption);
  }
  // Longer than any metadata block even though it fits in the file.
  EXPECT_CODE(CheckBlockRef({kDataStart, static_cast<uint32_t>(kMaxBlockBytes + 1)}, max, "r"), Code::kCorruption);
  Status s = CheckBlockRef({end, 16}, end, "my ref");
  EXPECT_NE(s.message().find("my ref"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace slabfs::engine
