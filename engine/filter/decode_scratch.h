// Per-thread scratch buffers for the steps of a chunk decode that cannot
// write into the caller's buffer (a deflate stream inflated before the
// shuffle is undone, a checksum stripped before inflating): two per thread,
// alternating, each keeping its size for the next chunk up to
// kKeepDecodeScratchBytes, so that decoding a stream of chunks usually
// allocates and zero-fills nothing. The engine's FilterPipeline and the
// HDF5 store's pipeline (stores/hdf5/hdf5_pipeline.cc) share them.
#ifndef SLABFS_ENGINE_FILTER_DECODE_SCRATCH_H_
#define SLABFS_ENGINE_FILTER_DECODE_SCRATCH_H_

#include <cstddef>

namespace slabfs::engine {

// A buffer grown past this is freed when the decode that grew it ends.
inline constexpr size_t kKeepDecodeScratchBytes = size_t{8} << 20;

// This thread's scratch buffer `k` (0 or 1), at least `n` bytes; its
// contents are undefined. Valid until the next call for the same `k` on
// this thread, or until a TrimDecodeScratch frees it.
char* DecodeScratch(int k, size_t n);

// For the length of one decode: at its end, frees this thread's buffers
// grown past kKeepDecodeScratchBytes (a huge chunk).
class TrimDecodeScratch {
 public:
  TrimDecodeScratch() = default;
  TrimDecodeScratch(const TrimDecodeScratch&) = delete;
  TrimDecodeScratch& operator=(const TrimDecodeScratch&) = delete;
  ~TrimDecodeScratch();
};

// Bytes this thread's two buffers hold now (tests).
size_t DecodeScratchBytes();

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_FILTER_DECODE_SCRATCH_H_
