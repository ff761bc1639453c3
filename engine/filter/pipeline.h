// The filter pipeline of a dataset: the transformations a chunk goes
// through on its way to the file (shuffle, deflate, checksum, in the order
// given) and back. Encoding never fails; decoding treats the stored bytes
// as untrusted and answers Corruption for anything that does not decode to
// exactly the chunk's size.
//
// Per chunk, a filter mask records the filters that were skipped: deflate
// is skipped when it does not make the chunk smaller (bit i = filter i of
// the pipeline). Shuffle and checksum are never skipped.
//
// Encoded layout: the filters apply in order, each to the output of the
// one before; checksum appends the CRC-32C (u32, little-endian) of the bytes
// it was given. Deflate output is a zlib stream (RFC 1950).
#ifndef SLABFS_ENGINE_FILTER_PIPELINE_H_
#define SLABFS_ENGINE_FILTER_PIPELINE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "slabfs/status.h"

namespace slabfs::engine {

enum class FilterId : uint8_t {
  kShuffle = 1,   // byte shuffle by element size
  kDeflate = 2,   // zlib, level 1-9
  kChecksum = 3,  // CRC-32C of the stored chunk
};

struct Filter {
  FilterId id = FilterId::kShuffle;
  uint8_t level = 0;  // deflate: 1-9; others 0
  bool operator==(const Filter&) const = default;
};

// The most bytes a pipeline adds to a chunk (the checksum).
constexpr uint64_t kMaxFilterOverhead = 4;

class FilterPipeline {
 public:
  static constexpr size_t kMaxFilters = 8;

  FilterPipeline() = default;
  // Checks the filters: known ids, deflate levels 1-9, each filter at most
  // once, at most kMaxFilters. InvalidArgument otherwise.
  static Result<FilterPipeline> Make(std::vector<Filter> filters);
  // "shuffle,deflate=6,checksum" (also "deflate:6"); "" or "none" is empty.
  static Result<FilterPipeline> Parse(std::string_view text);

  const std::vector<Filter>& filters() const { return filters_; }
  bool empty() const { return filters_.empty(); }
  // Whether a filter compresses (deflate): decoding then costs about a
  // nanosecond a byte, where shuffle and checksum take a tenth of that.
  bool compresses() const;
  // The most bytes an encoded chunk of n bytes can take.
  uint64_t MaxEncodedBytes(uint64_t n) const;
  // The inverse of Parse: "shuffle,deflate=6,checksum", or "none".
  std::string ToString() const;

  // Encodes a chunk of n bytes (elements of item_size bytes) into *out and
  // sets *mask to the filters skipped.
  void Encode(const char* data, size_t n, size_t item_size, std::string* out, uint32_t* mask) const;
  // Decodes stored bytes into exactly `expected` bytes at out. Corruption
  // (prefixed with `what` unless empty) for a checksum mismatch, a stream that does not
  // decompress, or one that decodes to any other size; no more than
  // `expected` bytes are ever produced, whatever the stream claims. After
  // an error the bytes at out are undefined.
  Status Decode(std::string_view stored, uint32_t mask, size_t item_size, char* out, size_t expected,
                std::string_view what) const;

 private:
  std::vector<Filter> filters_;
};

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_FILTER_PIPELINE_H_
