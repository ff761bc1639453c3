// fusefs/stale_end_page: which cached page a growth leaves stale (the page
// that holds the old end, whose bytes past it the kernel filled with zeros)
// and when none is: a zero fill value, an old end on a page boundary, no
// gap after the old end, an empty file.
#include "fusefs/stale_end_page.h"

#include <gtest/gtest.h>

#include <string>

namespace slabfs::fusefs {
namespace {

constexpr uint64_t kPage = 4096;

const std::string kMinusOne("\xff\xff\xff\xff", 4);
const std::string kZero(4, '\0');

TEST(StaleEndPageTest, ThePageHoldingTheOldEndWhenAGapReadsAsANonZeroFill) {
  PageRange r = StaleEndPage(kMinusOne, 8, 28, kPage);
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(r.end, kPage);
  // A gap reaching past that page: still only the old end's page (pages
  // wholly past the old end were never cached).
  r = StaleEndPage(kMinusOne, 3 * kPage + 100, 10 * kPage, kPage);
  EXPECT_EQ(r.first, 3 * kPage);
  EXPECT_EQ(r.end, 4 * kPage);
  // A NaN fill (f4, quiet NaN bytes 00 00 c0 7f): some byte is not zero.
  EXPECT_FALSE(StaleEndPage(std::string("\x00\x00\xc0\x7f", 4), 8, 12, kPage).empty());
}

TEST(StaleEndPageTest, NothingIsStaleWhenTheKernelsZerosAreRightOrNoPageHoldsThem) {
  EXPECT_TRUE(StaleEndPage(kZero, 8, 28, kPage).empty());                     // zeros are the fill
  EXPECT_TRUE(StaleEndPage(kMinusOne, 2 * kPage, 3 * kPage, kPage).empty());  // no bytes past the end in a page
  EXPECT_TRUE(StaleEndPage(kMinusOne, 0, 100, kPage).empty());                // an empty file caches no page
  EXPECT_TRUE(StaleEndPage(kMinusOne, 8, 8, kPage).empty());                  // a write at the end leaves no gap
  EXPECT_TRUE(StaleEndPage(kMinusOne, 8, 4, kPage).empty());                  // nor one before it
  EXPECT_TRUE(StaleEndPage(kMinusOne, 8, 28, 0).empty());                     // no page size known
}

}  // namespace
}  // namespace slabfs::fusefs
