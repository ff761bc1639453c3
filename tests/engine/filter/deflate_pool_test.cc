// engine/filter/deflate_pool: one compressor per level and one
// decompressor per thread, shared by the filter pipeline and the Zarr codecs.
#include "engine/filter/deflate_pool.h"

#include <libdeflate.h>

#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace slabfs::engine {
namespace {

TEST(DeflatePoolTest, OneCompressorPerLevelAndThread) {
  libdeflate_compressor* one = ThreadCompressor(6);
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(ThreadCompressor(6), one);
  EXPECT_NE(ThreadCompressor(1), one);
  // Levels outside libdeflate's 0..12 are clamped.
  EXPECT_EQ(ThreadCompressor(99), ThreadCompressor(kMaxDeflateLevel));
  EXPECT_EQ(ThreadCompressor(-3), ThreadCompressor(0));
  libdeflate_decompressor* d = ThreadDecompressor();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(ThreadDecompressor(), d);
  libdeflate_compressor* other = nullptr;
  libdeflate_decompressor* other_d = nullptr;
  std::thread([&] {
    other = ThreadCompressor(6);
    other_d = ThreadDecompressor();
  }).join();
  EXPECT_NE(other, one);
  EXPECT_NE(other_d, d);
}

TEST(DeflatePoolTest, ZlibAndGzipStreamsRoundTripAtEveryLevel) {
  std::string in;
  for (int i = 0; i < 20000; ++i) in += std::to_string(i % 97);
  for (int level = 0; level <= kMaxDeflateLevel; ++level) {
    SCOPED_TRACE(level);
    libdeflate_compressor* c = ThreadCompressor(level);
    for (bool gzip : {false, true}) {
      std::string z(gzip ? libdeflate_gzip_compress_bound(c, in.size()) : libdeflate_zlib_compress_bound(c, in.size()),
                    '\0');
      const size_t n = gzip ? libdeflate_gzip_compress(c, in.data(), in.size(), z.data(), z.size())
                            : libdeflate_zlib_compress(c, in.data(), in.size(), z.data(), z.size());
      ASSERT_GT(n, 0u);
      std::string back(in.size(), '\0');
      size_t made = 0;
      const libdeflate_result r =
          gzip ? libdeflate_gzip_decompress(ThreadDecompressor(), z.data(), n, back.data(), back.size(), &made)
               : libdeflate_zlib_decompress(ThreadDecompressor(), z.data(), n, back.data(), back.size(), &made);
      ASSERT_EQ(r, LIBDEFLATE_SUCCESS);
      EXPECT_EQ(back, in);
    }
  }
}

}  // namespace
}  // namespace slabfs::engine
