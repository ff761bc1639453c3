// HDF5's filters on the read side (stores/hdf5/hdf5_pipeline.h) and the
// Fletcher-32 checksum they verify (engine/filter/fletcher32.h).
#include "stores/hdf5/hdf5_pipeline.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "engine/filter/fletcher32.h"
#include "engine/filter/shuffle.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::stores {
namespace {

std::string Le32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>(v >> (8 * i));
  return s;
}

TEST(Fletcher32Test, MatchesWhatLibhdf5Stores) {
  // h5py, fletcher32=True, chunk of u1 0..6: the chunk is followed by
  // 09 0c 17 14.
  const unsigned char data[] = {0, 1, 2, 3, 4, 5, 6};
  EXPECT_EQ(engine::Fletcher32(data, sizeof data), 0x14170C09u);
  EXPECT_EQ(engine::Fletcher32(data, 0), 0u);
  // A nonzero sum that is a multiple of 65535 stays 65535: the word ffff.
  const unsigned char ones[] = {0xff, 0xff};
  EXPECT_EQ(engine::Fletcher32(ones, 2), 0xFFFFFFFFu);
  // Long input (several blocks of the reduction) against a plain loop
  // that reduces at every step.
  std::string big(5'000'001, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 + (i >> 9));
  uint64_t s1 = 0, s2 = 0;
  for (size_t i = 0; i + 1 < big.size(); i += 2) {
    s1 += static_cast<uint8_t>(big[i]) << 8 | static_cast<uint8_t>(big[i + 1]);
    s1 = s1 % 65535 == 0 && s1 != 0 ? 65535 : s1 % 65535;
    s2 += s1;
    s2 = s2 % 65535 == 0 && s2 != 0 ? 65535 : s2 % 65535;
  }
  s1 += static_cast<uint64_t>(static_cast<uint8_t>(big.back())) << 8;
  s1 = s1 % 65535 == 0 && s1 != 0 ? 65535 : s1 % 65535;
  s2 += s1;
  s2 = s2 % 65535 == 0 && s2 != 0 ? 65535 : s2 % 65535;
  EXPECT_EQ(engine::Fletcher32(big.data(), big.size()), static_cast<uint32_t>(s2 << 16 | s1));
}

TEST(Hdf5PipelineTest, UndoesShuffleAndChecksAndSkipsMaskedFilters) {
  std::string chunk(64, '\0');
  for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<char>(i * 7);
  std::string shuffled(chunk.size(), '\0');
  engine::ShuffleBytes(chunk.data(), chunk.size(), 4, shuffled.data());
  std::string stored = shuffled + Le32(engine::Fletcher32(shuffled.data(), shuffled.size()));
  ASSERT_OK_AND_ASSIGN(Hdf5Pipeline p,
                       Hdf5Pipeline::Make({{Hdf5Filter::Kind::kShuffle, 0, 4}, {Hdf5Filter::Kind::kFletcher32, 0, 1}}));
  EXPECT_EQ(p.ToString(), "shuffle,fletcher32");
  EXPECT_EQ(p.SlabFilters(), "shuffle,checksum");
  std::string out(chunk.size(), '\0');
  ASSERT_OK(p.Decode(stored, 0, out.data(), out.size(), "c"));
  EXPECT_EQ(out, chunk);
  // Shuffle skipped for this chunk (mask bit 0).
  std::string plain = chunk + Le32(engine::Fletcher32(chunk.data(), chunk.size()));
  ASSERT_OK(p.Decode(plain, 1, out.data(), out.size(), "c"));
  EXPECT_EQ(out, chunk);
  // Damage is Corruption: a flipped byte, a short chunk, a wrong size.
  stored[5] ^= 1;
  EXPECT_CODE(p.Decode(stored, 0, out.data(), out.size(), "c"), Code::kCorruption);
  EXPECT_CODE(p.Decode("ab", 0, out.data(), out.size(), "c"), Code::kCorruption);
  EXPECT_CODE(p.Decode(plain, 1, out.data(), out.size() - 4, "c"), Code::kCorruption);
}

TEST(Hdf5PipelineTest, RefusesWhatCannotBeDecoded) {
  EXPECT_CODE(Hdf5Pipeline::Make({{Hdf5Filter::Kind::kDeflate, 1, 1}, {Hdf5Filter::Kind::kDeflate, 1, 1}}),
              Code::kInvalidArgument);
  EXPECT_CODE(Hdf5Pipeline::Make({{Hdf5Filter::Kind::kShuffle, 0, 0}}), Code::kInvalidArgument);
  ASSERT_OK_AND_ASSIGN(Hdf5Pipeline p, Hdf5Pipeline::Make({{Hdf5Filter::Kind::kDeflate, 6, 1}}));
  std::string out(100, '\0');
  EXPECT_CODE(p.Decode(std::string(50, 'x'), 0, out.data(), out.size(), "c"), Code::kCorruption);
  EXPECT_TRUE(p.AllSkipped(1));
  EXPECT_FALSE(p.AllSkipped(0));
}

}  // namespace
}  // namespace slabfs::stores
