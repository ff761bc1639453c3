// The superblock: round trip, truncation at every length, every single-bit
// flip, and hostile field values under a valid checksum.
#include "engine/format/superblock.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "engine/format/layout.h"
#include "engine/util/coding.h"
#include "engine/util/crc32c.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::engine {
namespace {
namespace superblock_test {  // its own names in a unity batch

// Field offsets of the encoding (docs/format.md).
constexpr size_t kVersionAt = 8;
constexpr size_t kLengthAt = 12;
constexpr size_t kGenerationAt = 16;
constexpr size_t kRootAddrAt = 24;
constexpr size_t kRootLenAt = 32;
constexpr size_t kFreeAddrAt = 40;
constexpr size_t kFreeLenAt = 48;
constexpr size_t kFileEndAt = 56;
constexpr size_t kNextIdAt = 64;
constexpr size_t kCrcAt = kSuperblockBytes - 4;

Superblock Valid() {
  Superblock sb;
  sb.generation = 7;
  sb.root = {kDataStart + 4096, 200};
  sb.free_list = {kDataStart + 8192, 8 + 16 * 4 + 16};
  sb.file_end = kDataStart + 3 * 4096;
  sb.next_object_id = 42;
  return sb;
}

void ExpectSame(const Superblock& a, const Superblock& b) {
  EXPECT_EQ(a.generation, b.generation);
  EXPECT_EQ(a.root, b.root);
  EXPECT_EQ(a.free_list, b.free_list);
  EXPECT_EQ(a.file_end, b.file_end);
  EXPECT_EQ(a.next_object_id, b.next_object_id);
}

// Recomputes the checksum, so that only the field checks can reject.
void Reseal(std::string* s) { StoreU32(s->data() + kCrcAt, Crc32c(s->data(), kCrcAt)); }

std::string WithU32(uint32_t v, size_t at) {
  std::string s = EncodeSuperblock(Valid());
  StoreU32(s.data() + at, v);
  Reseal(&s);
  return s;
}

std::string WithU64(uint64_t v, size_t at) {
  std::string s = EncodeSuperblock(Valid());
  StoreU64(s.data() + at, v);
  Reseal(&s);
  return s;
}

TEST(SuperblockTest, RoundTripsEveryField) {
  Superblock sb = Valid();
  std::string s = EncodeSuperblock(sb);
  ASSERT_EQ(s.size(), kSuperblockBytes);
  ASSERT_OK_AND_ASSIGN(Superblock back, DecodeSuperblock(s));
  ExpectSame(sb, back);
}

TEST(SuperblockTest, RoundTripsWithoutFreeList) {
  Superblock sb = Valid();
  sb.free_list = {};
  ASSERT_OK_AND_ASSIGN(Superblock back, DecodeSuperblock(EncodeSuperblock(sb)));
  ExpectSame(sb, back);
  EXPECT_TRUE(back.free_list.empty());
}

TEST(SuperblockTest, RoundTripsExtremeValues) {
  Superblock sb;
  sb.generation = std::numeric_limits<uint64_t>::max();
  sb.file_end = std::numeric_limits<uint64_t>::max();
  sb.root = {sb.file_end - kMaxBlockBytes, static_cast<uint32_t>(kMaxBlockBytes)};
  sb.free_list = {kDataStart, static_cast<uint32_t>(kBlockHeaderBytes)};
  sb.next_object_id = std::numeric_limits<uint64_t>::max();
  ASSERT_OK_AND_ASSIGN(Superblock back, DecodeSuperblock(EncodeSuperblock(sb)));
  ExpectSame(sb, back);
}

TEST(SuperblockTest, RoundTripsBlocksEndingExactlyAtFileEnd) {
  Superblock sb = Valid();
  sb.root = {sb.file_end - 100, 100};
  sb.free_list = {kDataStart, static_cast<uint32_t>(sb.file_end - kDataStart - 100)};
  ASSERT_OK_AND_ASSIGN(Superblock back, DecodeSuperblock(EncodeSuperblock(sb)));
  ExpectSame(sb, back);
}

TEST(SuperblockTest, EncodingStartsWithMagicAndFormatVersion) {
  std::string s = EncodeSuperblock(Valid());
  EXPECT_EQ(s.substr(0, 8), std::string("\x89SLABFS\n", 8));
  EXPECT_TRUE(HasSuperblockMagic(s));
  EXPECT_EQ(LoadU32(s.data() + kVersionAt), 1u);  // no commit record
  EXPECT_EQ(LoadU32(s.data() + kLengthAt), kSuperblockBytes);
  EXPECT_EQ(LoadU64(s.data() + kGenerationAt), 7u);
  EXPECT_EQ(LoadU64(s.data() + kNextIdAt), 42u);
  EXPECT_EQ(LoadU32(s.data() + kCrcAt), Crc32c(s.data(), kCrcAt));
}

TEST(SuperblockTest, IgnoresTheRestOfItsSlot) {
  std::string s = EncodeSuperblock(Valid());
  s.append(kSuperblockSlotBytes - s.size(), '\xab');
  ASSERT_OK_AND_ASSIGN(Superblock back, DecodeSuperblock(s));
  ExpectSame(Valid(), back);
}

TEST(SuperblockTest, RejectsTruncatedSuperblockAtEveryLength) {
  std::string s = EncodeSuperblock(Valid());
  for (size_t n = 0; n < s.size(); ++n) {
    SCOPED_TRACE(n);
    EXPECT_CODE(DecodeSuperblock(std::string_view(s).substr(0, n)), Code::kCorruption);
  }
}

TEST(SuperblockTest, RejectsEverySingleBitFlip) {
  const std::string good = EncodeSuperblock(Valid());
  for (size_t i = 0; i < good.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string s = good;
      s[i] = static_cast<char>(s[i] ^ (1 << bit));
      SCOPED_TRACE("byte " + std::to_string(i) + " bit " + std::to_string(bit));
      EXPECT_CODE(DecodeSuperblock(s), Code::kCorruption);
    }
  }
}

TEST(SuperblockTest, RejectsAllZeroAndAllOnesSlots) {
  EXPECT_CODE(DecodeSuperblock(std::string(kSuperblockBytes, '\0')), Code::kCorruption);
  EXPECT_CODE(DecodeSuperblock(std::string(kSuperblockBytes, '\xff')), Code::kCorruption);
}

TEST(SuperblockTest, RejectsBadMagicEvenWithValidChecksum) {
  std::string s = EncodeSuperblock(Valid());
  s[1] = 's';
  Reseal(&s);
  EXPECT_FALSE(HasSuperblockMagic(s));
  EXPECT_CODE(DecodeSuperblock(s), Code::kCorruption);
}

TEST(SuperblockTest, RejectsUnknownFormatVersionAsNotSupported) {
  for (uint32_t v : {0u, kFormatVersion + 1, 0xffffffffu}) {
    SCOPED_TRACE(v);
    auto r = DecodeSuperblock(WithU32(v, kVersionAt));
    EXPECT_CODE(r, Code::kNotSupported);
    if (!r) {
      EXPECT_NE(r.error().message().find(std::to_string(v)), std::string::npos) << r.error().ToString();
    }
  }
}

TEST(SuperblockTest, RejectsBadLengthField) {
  for (uint32_t len : {0u, 127u, 129u, 4096u}) {
    SCOPED_TRACE(len);
    EXPECT_CODE(DecodeSuperblock(WithU32(len, kLengthAt)), Code::kCorruption);
  }
}

TEST(SuperblockTest, RejectsGenerationZero) {
  Superblock sb = Valid();
  sb.generation = 0;
  EXPECT_CODE(DecodeSuperblock(EncodeSuperblock(sb)), Code::kCorruption);
}

TEST(SuperblockTest, RejectsFileEndBeforeDataStart) {
  Superblock sb = Valid();
  sb.file_end = kDataStart - 1;
  sb.root = {};
  sb.free_list = {};
  EXPECT_CODE(DecodeSuperblock(EncodeSuperblock(sb)), Code::kCorruption);
  EXPECT_CODE(DecodeSuperblock(WithU64(0, kFileEndAt)), Code::kCorruption);
}

TEST(SuperblockTest, AcceptsAnEmptyRoot) {
  // An empty root reference is an empty root group (a new container).
  Superblock sb = Valid();
  sb.root = {};
  ASSERT_OK_AND_ASSIGN(Superblock back, DecodeSuperblock(EncodeSuperblock(sb)));
  EXPECT_TRUE(back.root.empty());
}

TEST(SuperblockTest, RejectsRootOutOfBounds) {
  const Superblock v = Valid();
  const BlockRef bad[] = {
      {0, 100},                                        // no address, but a length
      {kDataStart - 16, 100},                          // inside the superblock area
      {v.file_end - 50, 100},                          // runs past file_end
      {v.file_end, 16},                                // starts at file_end
      {v.file_end + 4096, 16},                         // starts past file_end
      {kDataStart, 15},                                // shorter than a block header
      {kDataStart, 0},                                 // empty length
      {std::numeric_limits<uint64_t>::max() - 8, 64},  // addr + len overflows
  };
  for (const BlockRef& ref : bad) {
    SCOPED_TRACE(std::to_string(ref.addr) + "+" + std::to_string(ref.len));
    Superblock sb = v;
    sb.root = ref;
    EXPECT_CODE(DecodeSuperblock(EncodeSuperblock(sb)), Code::kCorruption);
  }
  // Longer than any metadata block, although the file is big enough.
  Superblock sb = v;
  sb.file_end = kDataStart + 2 * kMaxBlockBytes;
  sb.root = {kDataStart, static_cast<uint32_t>(kMaxBlockBytes + 1)};
  EXPECT_CODE(DecodeSuperblock(EncodeSuperblock(sb)), Code::kCorruption);
}

TEST(SuperblockTest, RejectsFreeListOutOfBounds) {
  const Superblock v = Valid();
  const BlockRef bad[] = {
      {kDataStart - 1, 100},
      {v.file_end - 10, 100},
      {v.file_end + 1, 16},
      {kDataStart, 3},
      {std::numeric_limits<uint64_t>::max() - 8, 64},
  };
  for (const BlockRef& ref : bad) {
    SCOPED_TRACE(std::to_string(ref.addr) + "+" + std::to_string(ref.len));
    Superblock sb = v;
    sb.free_list = ref;
    EXPECT_CODE(DecodeSuperblock(EncodeSuperblock(sb)), Code::kCorruption);
  }
}

TEST(SuperblockTest, RejectsRawFieldsOutOfBoundsWithValidChecksum) {
  EXPECT_CODE(DecodeSuperblock(WithU64(kDataStart - 4096, kRootAddrAt)), Code::kCorruption);
  EXPECT_CODE(DecodeSuperblock(WithU32(0xffffffffu, kRootLenAt)), Code::kCorruption);
  EXPECT_CODE(DecodeSuperblock(WithU64(1, kFreeAddrAt)), Code::kCorruption);
  EXPECT_CODE(DecodeSuperblock(WithU32(0xffffffffu, kFreeLenAt)), Code::kCorruption);
  EXPECT_CODE(DecodeSuperblock(WithU64(kDataStart + 4096, kFileEndAt)), Code::kCorruption);
}

TEST(SuperblockTest, RejectsNextObjectIdAtOrBelowTheRoot) {
  for (uint64_t id : {0u, 1u}) {
    SCOPED_TRACE(id);
    Superblock sb = Valid();
    sb.next_object_id = id;
    EXPECT_CODE(DecodeSuperblock(EncodeSuperblock(sb)), Code::kCorruption);
  }
  Superblock sb = Valid();
  sb.next_object_id = 2;
  EXPECT_OK(DecodeSuperblock(EncodeSuperblock(sb)));
}

TEST(SuperblockTest, TellsMissingMagicApartFromDamage) {
  EXPECT_FALSE(HasSuperblockMagic(""));
  EXPECT_FALSE(HasSuperblockMagic(std::string("\x89SLABFS", 7)));
  EXPECT_FALSE(HasSuperblockMagic("#!/bin/sh\necho hi\n"));
  EXPECT_FALSE(HasSuperblockMagic(std::string("\x89SLABFS\r\n", 9)));  // text-mode mangled
  EXPECT_TRUE(HasSuperblockMagic(std::string("\x89SLABFS\n", 8)));
  // Damage after the magic keeps the magic: "a damaged container".
  std::string s = EncodeSuperblock(Valid());
  s[kGenerationAt] ^= 1;
  EXPECT_TRUE(HasSuperblockMagic(s));
  EXPECT_CODE(DecodeSuperblock(s), Code::kCorruption);
}

// ------------------------------------------------- the commit record (v2)

Superblock WithRecord() {
  Superblock sb = Valid();
  sb.written = {{kDataStart, 100, 0x12345678}, {kDataStart + 100, 4096, 7}, {kDataStart + 8192, 200, 0}};
  return sb;
}

TEST(SuperblockTest, ACommitRecordRoundTripsAsVersion2) {
  const Superblock sb = WithRecord();
  const std::string s = EncodeSuperblock(sb);
  ASSERT_EQ(s.size(), kSuperblockBytes + 3 * kWrittenExtentBytes);
  EXPECT_EQ(LoadU32(s.data() + kVersionAt), 2u);
  ASSERT_OK_AND_ASSIGN(Superblock back, DecodeSuperblock(s));
  ExpectSame(sb, back);
  EXPECT_EQ(back.written, sb.written);
  // The rest of the slot is not read.
  std::string slot = s + std::string(kSuperblockSlotBytes - s.size(), '\xcd');
  ASSERT_OK_AND_ASSIGN(back, DecodeSuperblock(slot));
  EXPECT_EQ(back.written, sb.written);
  // The largest record fits in the slot.
  Superblock full = Valid();
  full.file_end = kDataStart + kMaxWrittenExtents * 10;
  for (size_t i = 0; i < kMaxWrittenExtents; ++i) full.written.push_back({kDataStart + i * 10, 10, uint32_t(i)});
  full.root = {};
  full.free_list = {};
  const std::string f = EncodeSuperblock(full);
  EXPECT_LE(f.size(), kSuperblockSlotBytes);
  ASSERT_OK_AND_ASSIGN(back, DecodeSuperblock(f));
  EXPECT_EQ(back.written, full.written);
}

TEST(SuperblockTest, ATruncatedOrFlippedRecordIsCorruption) {
  const std::string good = EncodeSuperblock(WithRecord());
  for (size_t n = kSuperblockBytes; n < good.size(); ++n) {
    SCOPED_TRACE(n);
    EXPECT_CODE(DecodeSuperblock(std::string_view(good).substr(0, n)), Code::kCorruption);
  }
  for (size_t i = kSuperblockBytes; i < good.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string s = good;
      s[i] = static_cast<char>(s[i] ^ (1 << bit));
      SCOPED_TRACE("byte " + std::to_string(i) + " bit " + std::to_string(bit));
      EXPECT_CODE(DecodeSuperblock(s), Code::kCorruption);
    }
  }
}

TEST(SuperblockTest, RejectsHostileRecordsUnderValidChecksums) {
  auto with = [](std::vector<WrittenExtent> w, uint64_t file_end = kDataStart + 3 * 4096) {
    Superblock sb = Valid();
    sb.file_end = file_end;
    sb.written = std::move(w);
    return EncodeSuperblock(sb);
  };
  const uint64_t end = kDataStart + 3 * 4096;
  const std::vector<WrittenExtent> bad[] = {
      {{kDataStart, 0, 0}},                                            // empty
      {{kDataStart - 1, 10, 0}},                                       // in the superblock area
      {{end - 5, 10, 0}},                                              // past the file end
      {{end, 1, 0}},                                                   // at the file end
      {{kDataStart + 100, 10, 0}, {kDataStart, 10, 0}},                // out of order
      {{kDataStart, 100, 0}, {kDataStart + 50, 10, 0}},                // overlapping
      {{kDataStart, 100, 0}, {kDataStart, 100, 0}},                    // twice
      {{kDataStart, static_cast<uint32_t>(kMaxWrittenBytes + 1), 0}},  // more than a record may list
  };
  for (size_t i = 0; i < std::size(bad); ++i) {
    SCOPED_TRACE(i);
    EXPECT_CODE(DecodeSuperblock(with(bad[i], i + 1 == std::size(bad) ? kDataStart + (4ull << 20) : end)),
                Code::kCorruption);
  }
  // Adjacent extents are fine.
  EXPECT_OK(DecodeSuperblock(with({{kDataStart, 100, 0}, {kDataStart + 100, 10, 0}})));
  // A version 2 superblock with a count of 0, or more than fit in a slot.
  std::string s = EncodeSuperblock(WithRecord());
  for (uint32_t count : {0u, uint32_t(kMaxWrittenExtents + 1), 0xffffffffu}) {
    SCOPED_TRACE(count);
    std::string t = s;
    StoreU32(t.data() + 72, count);
    Reseal(&t);
    t.resize(kSuperblockSlotBytes, '\0');
    EXPECT_CODE(DecodeSuperblock(t), Code::kCorruption);
  }
  // Version 1 with record fields set, and version 2 with reserved bytes.
  std::string v1 = EncodeSuperblock(Valid());
  StoreU32(v1.data() + 72, 1);
  Reseal(&v1);
  EXPECT_CODE(DecodeSuperblock(v1), Code::kCorruption);
  std::string v2 = s;
  v2[100] = 1;
  Reseal(&v2);
  EXPECT_CODE(DecodeSuperblock(v2), Code::kCorruption);
}

}  // namespace superblock_test
}  // namespace
}  // namespace slabfs::engine
