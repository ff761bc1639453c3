// The per-thread decode scratch buffers (engine/filter/decode_scratch.h)
// that the filter pipeline and the HDF5 store's pipeline share: two
// buffers a thread, reused while they are big enough, grown buffers past
// the keep limit freed at the end of a decode, each thread its own.
#include "engine/filter/decode_scratch.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <string_view>
#include <thread>

namespace slabfs::engine {
namespace {

TEST(DecodeScratchTest, TwoBuffersReusedWhileBigEnough) {
  char* a = DecodeScratch(0, 1000);
  char* b = DecodeScratch(1, 1000);
  ASSERT_NE(a, b);
  std::memset(a, 1, 1000);
  std::memset(b, 2, 1000);
  EXPECT_EQ(DecodeScratch(0, 500), a);  // smaller: the same buffer
  EXPECT_EQ(DecodeScratch(1, 1000), b);
  EXPECT_EQ(b[999], 2) << "a buffer keeps its bytes between calls";
  char* bigger = DecodeScratch(0, 4000);
  std::memset(bigger, 3, 4000);  // the grown buffer holds all 4000 bytes
  EXPECT_GE(DecodeScratchBytes(), 5000u);
}

TEST(DecodeScratchTest, ABufferGrownPastTheLimitIsFreedWhenTheDecodeEnds) {
  {
    TrimDecodeScratch trim;
    char* huge = DecodeScratch(1, kKeepDecodeScratchBytes + 1);
    huge[kKeepDecodeScratchBytes] = 1;
    EXPECT_GT(DecodeScratchBytes(), kKeepDecodeScratchBytes);
  }
  EXPECT_LE(DecodeScratchBytes(), kKeepDecodeScratchBytes);
  {
    TrimDecodeScratch trim;
    DecodeScratch(0, 1 << 20);
  }
  EXPECT_GE(DecodeScratchBytes(), size_t{1} << 20) << "a buffer within the limit is kept";
}

TEST(DecodeScratchTest, StoredAndChunkBuffersOutliveADecode) {
  char* chunk = nullptr;
  {
    TrimDecodeScratch trim;
    chunk = DecodeScratch(kScratchChunk, kKeepDecodeScratchBytes + 10);
    chunk[kKeepDecodeScratchBytes + 9] = 7;
    DecodeScratch(kScratchStored, 100);
  }
  // The caller copies runs out of the decoded chunk after the decode ended.
  EXPECT_EQ(DecodeScratch(kScratchChunk, kKeepDecodeScratchBytes + 10), chunk);
  EXPECT_EQ(chunk[kKeepDecodeScratchBytes + 9], 7);
  // A much smaller request lets a buffer past the keep limit go.
  DecodeScratch(kScratchChunk, 100);
  EXPECT_LT(DecodeScratchBytes(), kKeepDecodeScratchBytes);
}

TEST(DecodeScratchTest, DestinationsAlternateAndTheLastStepWritesOut) {
  // Three steps run 2, 1, 0; the last that transforms is step 1.
  auto transforms = [](size_t i) { return i >= 1; };
  EXPECT_EQ(LastTransformingStep(3, transforms), 1u);
  EXPECT_EQ(LastTransformingStep(3, [](size_t) { return false; }), 3u);
  char out[64];
  DecodeDestinations dest(out, sizeof out, 1);
  char* first = dest(2, 128);
  char* second = dest(1, sizeof out);
  EXPECT_NE(first, out);
  EXPECT_EQ(second, out) << "the last transforming step writes into the caller's buffer";
  char* third = dest(0, 128);
  EXPECT_NE(third, first) << "a step never writes where its input lies";
  // Wrong size: a scratch buffer, not the caller's.
  DecodeDestinations odd(out, sizeof out, 0);
  EXPECT_NE(odd(0, 63), out);
}

TEST(DecodeScratchTest, AnUnshuffleStepAndTheFinishLandTheResultInTheCallersBuffer) {
  // Four 2-byte elements shuffled: all first bytes, then all second bytes.
  const std::string shuffled = "ABCDabcd";
  std::string out(8, '?');
  {
    // The shuffle is the last step that changes the bytes: it writes out.
    DecodeDestinations dest(out.data(), out.size(), 0);
    std::string_view cur = dest.Unshuffle(0, shuffled, 2);
    EXPECT_EQ(cur.data(), out.data());
    dest.Finish(cur);
  }
  EXPECT_EQ(out, "AaBbCcDd");
  std::string out2(8, '?');
  {
    // An earlier step: into scratch, and Finish copies it out.
    DecodeDestinations dest(out2.data(), out2.size(), 0);
    std::string_view cur = dest.Unshuffle(1, shuffled, 2);
    EXPECT_NE(cur.data(), out2.data());
    dest.Finish(cur);
  }
  EXPECT_EQ(out2, "AaBbCcDd");
  // An item of one byte, or nothing to unshuffle, leaves the input as it is.
  DecodeDestinations dest(out.data(), out.size(), 0);
  EXPECT_EQ(dest.Unshuffle(0, shuffled, 1).data(), shuffled.data());
  EXPECT_TRUE(dest.Unshuffle(0, std::string_view(), 4).empty());
  dest.Finish(std::string_view());  // an empty result copies nothing
}

TEST(DecodeScratchTest, EachThreadHasItsOwn) {
  char* mine = DecodeScratch(0, 64);
  char* theirs = nullptr;
  size_t their_bytes = 1;
  std::thread t([&] {
    their_bytes = DecodeScratchBytes();
    theirs = DecodeScratch(0, 64);
  });
  t.join();
  EXPECT_EQ(their_bytes, 0u) << "a new thread starts with no buffers";
  EXPECT_NE(theirs, mine);
}

}  // namespace
}  // namespace slabfs::engine
