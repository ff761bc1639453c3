// The filter pipeline: round trips through every combination and order of
// filters for every item size, odd lengths included; the filter mask when
// deflate does not help; checksums catch every flipped byte; damaged,
// truncated, padded and lying deflate streams are Corruption and never
// produce more than the chunk's size; parsing and printing.
#include "engine/filter/pipeline.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tests/testutil/status_matchers.h"

namespace slabfs::engine {
namespace {

// Smooth data (compresses well), like the sin/cos field.
std::string Smooth(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i + 4 <= n; i += 4) {
    float v = std::sin(static_cast<float>(i) / 400.f);
    std::memcpy(&s[i], &v, 4);
  }
  return s;
}

std::string Noise(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

FilterPipeline P(std::string_view text) {
  auto p = FilterPipeline::Parse(text);
  EXPECT_TRUE(p.has_value()) << text << ": " << p.error().ToString();
  return p ? *p : FilterPipeline{};
}

// compresses() picks the pipelines whose chunks are worth a core each to
// encode and decode (DatasetState::CodecIsCostly).
TEST(FilterPipelineTest, CompressesOnlyWithDeflate) {
  for (const char* text : {"none", "checksum", "shuffle", "shuffle,checksum"}) {
    auto p = FilterPipeline::Parse(text);
    ASSERT_TRUE(p.has_value()) << text;
    EXPECT_FALSE(p->compresses()) << text;
  }
  for (const char* text : {"deflate=1", "shuffle,deflate=6", "shuffle,deflate=9,checksum"}) {
    auto p = FilterPipeline::Parse(text);
    ASSERT_TRUE(p.has_value()) << text;
    EXPECT_TRUE(p->compresses()) << text;
  }
}

TEST(FilterPipelineTest, EveryCombinationRoundTrips) {
  const std::vector<std::string> pipelines = {"none",
                                              "shuffle",
                                              "deflate=1",
                                              "deflate=9",
                                              "checksum",
                                              "shuffle,deflate=6",
                                              "shuffle,checksum",
                                              "deflate=6,checksum",
                                              "shuffle,deflate=6,checksum",
                                              "checksum,deflate=3",
                                              "checksum,shuffle,deflate=2",
                                              "deflate=4,shuffle"};
  for (const std::string& text : pipelines) {
    const FilterPipeline p = P(text);
    for (size_t item : {1, 2, 4, 8}) {
      // Whole chunks and trimmed edge chunks of odd lengths, compressible
      // and not.
      for (size_t n : {size_t{0}, size_t{1}, item * 7, item * 1000 + (item > 1 ? item : 0), size_t{65536}}) {
        for (const std::string& data : {Smooth(n), Noise(n, n + item)}) {
          std::string stored;
          uint32_t mask = 0;
          p.Encode(data.data(), data.size(), item, &stored, &mask);
          std::string back(data.size(), '?');
          ASSERT_OK(p.Decode(stored, mask, item, back.data(), back.size(), "chunk"));
          ASSERT_EQ(back, data) << text << " item " << item << " n " << n;
        }
      }
    }
  }
}

TEST(FilterPipelineTest, DeflateThatDoesNotHelpIsSkippedAndMasked) {
  const FilterPipeline p = P("shuffle,deflate=6,checksum");
  std::string stored;
  uint32_t mask = 0;
  const std::string noise = Noise(4096, 1);
  p.Encode(noise.data(), noise.size(), 4, &stored, &mask);
  EXPECT_EQ(mask, 1u << 1);
  EXPECT_EQ(stored.size(), noise.size() + 4);  // shuffled, not deflated, checksummed
  const std::string smooth = Smooth(1 << 16);
  p.Encode(smooth.data(), smooth.size(), 4, &stored, &mask);
  EXPECT_EQ(mask, 0u);
  EXPECT_LT(stored.size(), smooth.size() * 3 / 4);
  // A mask naming a filter that is never skipped is refused.
  std::string out(smooth.size(), '\0');
  EXPECT_CODE(p.Decode(stored, 1u << 0, 4, out.data(), out.size(), "chunk"), Code::kCorruption);
  EXPECT_CODE(p.Decode(stored, 1u << 5, 4, out.data(), out.size(), "chunk"), Code::kCorruption);
}

TEST(FilterPipelineTest, ChecksumCatchesEveryFlippedByte) {
  const FilterPipeline p = P("shuffle,deflate=6,checksum");
  const std::string data = Smooth(8192);
  std::string stored;
  uint32_t mask;
  p.Encode(data.data(), data.size(), 4, &stored, &mask);
  std::string out(data.size(), '\0');
  for (size_t i = 0; i < stored.size(); ++i) {
    std::string bad = stored;
    bad[i] = static_cast<char>(bad[i] ^ (1 << (i % 8)));
    Status s = p.Decode(bad, mask, 4, out.data(), out.size(), "dataset 7 chunk 3");
    ASSERT_EQ(s.code(), Code::kCorruption) << "byte " << i;
    EXPECT_NE(s.message().find("dataset 7 chunk 3"), std::string::npos);
  }
}

TEST(FilterPipelineTest, DamagedDeflateStreamsAreCorruptionNeverACrash) {
  const FilterPipeline p = P("deflate=6");
  const std::string data = Smooth(1 << 15);
  std::string stored;
  uint32_t mask;
  p.Encode(data.data(), data.size(), 4, &stored, &mask);
  ASSERT_EQ(mask, 0u);
  std::string out(data.size(), '\0');
  std::mt19937_64 rng(9);
  int caught = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bad = stored;
    for (int k = 0; k < 1 + trial % 4; ++k) bad[rng() % bad.size()] ^= static_cast<char>(1 + rng() % 255);
    Status s = p.Decode(bad, mask, 4, out.data(), out.size(), "chunk");
    // Without a checksum a flip may still decode to the right size (a
    // literal changed); anything else must be Corruption.
    if (!s.ok()) {
      ASSERT_EQ(s.code(), Code::kCorruption) << s.ToString();
      ++caught;
    }
  }
  EXPECT_GT(caught, 1000);
  // Truncated at every length, and with bytes after the stream.
  for (size_t n = 0; n < stored.size(); n += 7)
    EXPECT_CODE(p.Decode(stored.substr(0, n), mask, 4, out.data(), out.size(), "chunk"), Code::kCorruption);
  EXPECT_CODE(p.Decode(stored + "x", mask, 4, out.data(), out.size(), "chunk"), Code::kCorruption);
  // A stream of the wrong size: shorter and longer than the chunk.
  EXPECT_CODE(p.Decode(stored, mask, 4, out.data(), out.size() - 4, "chunk"), Code::kCorruption);
  std::string bigger(out.size() + 4, '\0');
  EXPECT_CODE(p.Decode(stored, mask, 4, bigger.data(), bigger.size(), "chunk"), Code::kCorruption);
}

TEST(FilterPipelineTest, ADecompressionBombProducesNoMoreThanTheChunk) {
  // 64 MiB of zeros compress to about 64 KiB; declared as a 4 KiB chunk it
  // is refused after inflating 4 KiB at most.
  const size_t huge = 64u << 20;
  std::string zeros(huge, '\0');
  uLongf len = compressBound(huge);
  std::string bomb(len, '\0');
  ASSERT_EQ(
      compress2(reinterpret_cast<Bytef*>(bomb.data()), &len, reinterpret_cast<const Bytef*>(zeros.data()), huge, 9),
      Z_OK);
  bomb.resize(len);
  const FilterPipeline p = P("deflate=9");
  std::string out(4096, '\0');
  EXPECT_CODE(p.Decode(bomb, 0, 1, out.data(), out.size(), "chunk"), Code::kCorruption);
}

TEST(FilterPipelineTest, StreamsAreStandardZlibBothWays) {
  // What we store, zlib reads; what zlib writes (any level), we read.
  std::string data(100000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i / 7) % 13);
  for (int level : {1, 6, 9}) {
    SCOPED_TRACE(level);
    const FilterPipeline p = P("deflate=" + std::to_string(level));
    std::string stored;
    uint32_t mask = 1;
    p.Encode(data.data(), data.size(), 1, &stored, &mask);
    ASSERT_EQ(mask, 0u);
    std::string back(data.size(), '\0');
    uLongf back_len = back.size();
    ASSERT_EQ(uncompress(reinterpret_cast<Bytef*>(back.data()), &back_len,
                         reinterpret_cast<const Bytef*>(stored.data()), stored.size()),
              Z_OK);
    EXPECT_EQ(back_len, data.size());
    EXPECT_TRUE(back == data);

    uLongf len = compressBound(data.size());
    std::string theirs(len, '\0');
    ASSERT_EQ(compress2(reinterpret_cast<Bytef*>(theirs.data()), &len, reinterpret_cast<const Bytef*>(data.data()),
                        data.size(), level),
              Z_OK);
    theirs.resize(len);
    std::string ours(data.size(), '\0');
    ASSERT_OK(p.Decode(theirs, 0, 1, ours.data(), ours.size(), "chunk"));
    EXPECT_TRUE(ours == data);
    // Bytes after the end of the stream are not part of any chunk.
    EXPECT_CODE(p.Decode(theirs + "x", 0, 1, ours.data(), ours.size(), "chunk"), Code::kCorruption);
  }
}

TEST(FilterPipelineTest, ParsesAndPrints) {
  EXPECT_EQ(P("shuffle, deflate:6 ,checksum").ToString(), "shuffle,deflate=6,checksum");
  EXPECT_EQ(P("deflate").ToString(), "deflate=6");
  EXPECT_EQ(P("").ToString(), "none");
  EXPECT_EQ(P("none").ToString(), "none");
  EXPECT_TRUE(P("none").empty());
  for (const char* bad : {"gzip", "deflate=0", "deflate=10", "deflate=x", "deflate6", "shuffle,shuffle",
                          "shuffle,,checksum", "checksum,"}) {
    auto p = FilterPipeline::Parse(bad);
    EXPECT_FALSE(p.has_value()) << bad;
    if (!p) {
      EXPECT_EQ(p.error().code(), Code::kInvalidArgument) << bad;
    }
  }
  EXPECT_CODE(FilterPipeline::Make({{FilterId::kShuffle, 3}}), Code::kInvalidArgument);
  EXPECT_CODE(FilterPipeline::Make({{static_cast<FilterId>(9), 0}}), Code::kInvalidArgument);
  EXPECT_CODE(FilterPipeline::Make(std::vector<Filter>(9, {FilterId::kChecksum, 0})), Code::kInvalidArgument);
}

}  // namespace
}  // namespace slabfs::engine
