// Per-thread libdeflate compressors and decompressor, for every user of
// DEFLATE: the dataset filter pipeline (engine/filter/pipeline.cc) and the
// Zarr zlib and gzip codecs of `slab import`/`export`
// (tools/convert/zarr_codecs.cc). libdeflate works on whole buffers, about
// twice zlib's speed both ways, and writes and reads standard zlib and gzip
// streams.
//
// Thread safety: each thread has its own objects (chunks are encoded and
// decoded on every core at once); a pointer returned here must be used on
// the calling thread only. They live until the thread ends.
#ifndef SLABFS_ENGINE_FILTER_DEFLATE_POOL_H_
#define SLABFS_ENGINE_FILTER_DEFLATE_POOL_H_

struct libdeflate_compressor;
struct libdeflate_decompressor;

namespace slabfs::engine {

// libdeflate's compression levels: 0 (stored blocks) to 12.
constexpr int kMaxDeflateLevel = 12;

// The calling thread's compressor for `level` (clamped to 0..12), made on
// first use; nullptr when there is no memory for it.
libdeflate_compressor* ThreadCompressor(int level);

// The calling thread's decompressor, made on first use; nullptr when there
// is no memory for it.
libdeflate_decompressor* ThreadDecompressor();

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_FILTER_DEFLATE_POOL_H_
