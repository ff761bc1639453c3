// Per-thread scratch buffers for the steps of a chunk decode that cannot
// write into the caller's buffer (a deflate stream inflated before the
// shuffle is undone, a checksum stripped before inflating): two per thread,
// alternating, each keeping its size for the next chunk up to
// kKeepDecodeScratchBytes, so that decoding a stream of chunks usually
// allocates and zero-fills nothing. The engine's FilterPipeline and the
// HDF5 store's pipeline (stores/hdf5/hdf5_pipeline.cc) share them and the
// plan of which step writes where (DecodeDestinations); the HDF5 store's
// reads keep a chunk's stored bytes and a whole decoded chunk here too.
#ifndef SLABFS_ENGINE_FILTER_DECODE_SCRATCH_H_
#define SLABFS_ENGINE_FILTER_DECODE_SCRATCH_H_

#include <cstddef>
#include <string_view>

namespace slabfs::engine {

// A buffer grown past this is freed when the decode that grew it ends
// (step buffers), or when a request of less than a quarter of it comes.
inline constexpr size_t kKeepDecodeScratchBytes = size_t{8} << 20;

// The buffers of one thread: two for the steps of a decode, alternating;
// one for a chunk's stored bytes as read from the file; one for a whole
// decoded chunk that is copied out in runs (the HDF5 store's reads).
enum DecodeScratchSlot : int { kScratchStepA = 0, kScratchStepB = 1, kScratchStored = 2, kScratchChunk = 3 };
inline constexpr int kDecodeScratchSlots = 4;

// This thread's scratch buffer `k`, at least `n` bytes; its contents are
// undefined. Valid until the next call for the same `k` on this thread,
// or until a TrimDecodeScratch frees it (step buffers only).
char* DecodeScratch(int k, size_t n);

// For the length of one decode: at its end, frees this thread's step
// buffers grown past kKeepDecodeScratchBytes (a huge chunk). The stored
// and chunk buffers outlive a decode (the caller reads them after it).
class TrimDecodeScratch {
 public:
  TrimDecodeScratch() = default;
  TrimDecodeScratch(const TrimDecodeScratch&) = delete;
  TrimDecodeScratch& operator=(const TrimDecodeScratch&) = delete;
  ~TrimDecodeScratch();
};

// Where each step of a decode writes. A pipeline's filters are undone
// from the last to the first; the step at `last_step` (the lowest-indexed
// filter that changes the bytes, which runs last) writes straight into the
// caller's buffer when its output is exactly `expected` bytes, and every
// other step into the step buffers, alternating, so that a step never
// writes where its input lies. Holds a TrimDecodeScratch.
class DecodeDestinations {
 public:
  DecodeDestinations(char* out, size_t expected, size_t last_step)
      : out_(out), expected_(expected), last_step_(last_step) {}
  char* operator()(size_t step, size_t n) {
    if (step == last_step_ && n == expected_) return out_;
    scratch_ ^= 1;
    return DecodeScratch(scratch_, n);
  }
  // Step `step` undoes a byte shuffle of elements of `item` bytes: `in`
  // unshuffled into where the step writes. An item of 1 byte or less (and
  // an empty input) leaves `in` as it is.
  std::string_view Unshuffle(size_t step, std::string_view in, size_t item);
  // The decode's end: its result, exactly `expected` bytes (the caller has
  // checked), copied into the caller's buffer unless it is there already.
  void Finish(std::string_view result) const;

 private:
  TrimDecodeScratch trim_;
  char* out_;
  size_t expected_;
  size_t last_step_;
  int scratch_ = kScratchStepA;
};

// The lowest i < n for which transforms(i) holds (the last step of a
// decode that changes the bytes), or n when none does.
template <class Transforms>
size_t LastTransformingStep(size_t n, Transforms&& transforms) {
  for (size_t i = 0; i < n; ++i)
    if (transforms(i)) return i;
  return n;
}

// Bytes this thread's buffers hold now (tests).
size_t DecodeScratchBytes();

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_FILTER_DECODE_SCRATCH_H_
