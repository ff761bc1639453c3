// engine/filter/shuffle: the byte shuffle of the filter pipeline and of the
// Zarr `shuffle` codec, against the layout written out by hand and a plain
// loop, for every element size the fast paths and the generic one take
// (whole blocks of 16 elements, the vector path's, and the tails after them).
#include "engine/filter/shuffle.h"

#include <random>
#include <string>

#include <gtest/gtest.h>

namespace slabfs::engine {
namespace {

TEST(ShuffleTest, PutsByteBOfElementIAtBTimesCountPlusI) {
  // Three elements of four bytes and a two-byte tail.
  const std::string in = "ABCDabcd0123xy";
  std::string out(in.size(), '?');
  ShuffleBytes(in.data(), in.size(), 4, out.data());
  EXPECT_EQ(out, "Aa0Bb1Cc2Dd3xy");
  std::string back(in.size(), '?');
  UnshuffleBytes(out.data(), out.size(), 4, back.data());
  EXPECT_EQ(back, in);
}

TEST(ShuffleTest, MatchesAPlainLoopAndRoundTripsForEveryItemSize) {
  std::mt19937 rng(1);
  for (size_t item : {0, 1, 2, 3, 4, 5, 7, 8, 9, 16}) {
    for (size_t n : {0, 1, 7, 64, 1000, 1001, 4096, 4096 + 8 * 16 + 13}) {
      SCOPED_TRACE(std::to_string(item) + " x " + std::to_string(n));
      std::string in(n, '\0');
      for (char& c : in) c = static_cast<char>(rng());
      std::string want = in;
      if (item > 1) {
        const size_t count = n / item;
        for (size_t i = 0; i < count; ++i)
          for (size_t b = 0; b < item; ++b) want[b * count + i] = in[i * item + b];
      }
      std::string out(n, '\0'), back(n, '\0');
      ShuffleBytes(in.data(), n, item, out.data());
      EXPECT_EQ(out, want);
      UnshuffleBytes(out.data(), n, item, back.data());
      EXPECT_EQ(back, in);
    }
  }
}

}  // namespace
}  // namespace slabfs::engine
