#include "engine/filter/deflate_pool.h"

#include <libdeflate.h>

#include <algorithm>

namespace slabfs::engine {
namespace {

struct Deflaters {
  libdeflate_compressor* by_level[kMaxDeflateLevel + 1] = {};
  libdeflate_decompressor* inflater = nullptr;
  ~Deflaters() {
    for (auto* c : by_level) libdeflate_free_compressor(c);
    libdeflate_free_decompressor(inflater);
  }
};

Deflaters& ThreadDeflaters() {
  thread_local Deflaters d;
  return d;
}

}  // namespace

libdeflate_compressor* ThreadCompressor(int level) {
  level = std::clamp(level, 0, kMaxDeflateLevel);
  libdeflate_compressor*& c = ThreadDeflaters().by_level[level];
  if (!c) c = libdeflate_alloc_compressor(level);
  return c;
}

libdeflate_decompressor* ThreadDecompressor() {
  libdeflate_decompressor*& d = ThreadDeflaters().inflater;
  if (!d) d = libdeflate_alloc_decompressor();
  return d;
}

}  // namespace slabfs::engine
