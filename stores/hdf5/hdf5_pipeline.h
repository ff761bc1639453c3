// HDF5's filter pipeline on the read side, for the filters the HDF5 store
// decodes: deflate (a zlib stream), shuffle (by the element size the
// filter was given) and Fletcher-32 (4 bytes appended, little-endian).
// Filters apply in the order listed when a chunk is written, so decoding
// undoes them from the last to the first, skipping those whose bit is set
// in the chunk's filter mask (bit i: filter i was skipped).
//
// Decoding treats the stored bytes as untrusted: a checksum mismatch, a
// stream that does not inflate to exactly the size the filter was given,
// or a result of any other size than the chunk's is Corruption; no more
// than that size is ever produced.
//
// Thread-safe: Decode uses per-thread scratch buffers.
#ifndef SLABFS_STORES_HDF5_HDF5_PIPELINE_H_
#define SLABFS_STORES_HDF5_HDF5_PIPELINE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "slabfs/status.h"

namespace slabfs::stores {

struct Hdf5Filter {
  enum class Kind : uint8_t { kDeflate, kShuffle, kFletcher32 };
  Kind kind = Kind::kDeflate;
  uint32_t level = 0;         // deflate: the level it was written with (for display)
  uint32_t shuffle_item = 1;  // shuffle: the element size it shuffles by
};

class Hdf5Pipeline {
 public:
  static constexpr size_t kMaxFilters = 32;  // HDF5's own limit

  // InvalidArgument for more than kMaxFilters filters or more than one
  // deflate (the size a second one was given cannot be known).
  static Result<Hdf5Pipeline> Make(std::vector<Hdf5Filter> filters);

  const std::vector<Hdf5Filter>& filters() const { return filters_; }
  bool empty() const { return filters_.empty(); }
  bool compresses() const;
  // "shuffle,deflate=4,fletcher32" ("" when empty).
  std::string ToString() const;
  // The same in the spelling of a slab dataset's pipeline (fletcher32 is
  // "checksum", deflate levels above 9 are 9, deflate=0 is dropped).
  std::string SlabFilters() const;
  // Whether every filter is skipped under `mask`: the chunk is stored as is.
  bool AllSkipped(uint32_t mask) const;
  // The most bytes a stored chunk of an n-byte chunk may take before it is
  // refused as damaged (deflate can grow incompressible data a little).
  uint64_t MaxStoredBytes(uint64_t n) const;

  // Decodes `stored` into exactly `expected` bytes at out; `what` prefixes
  // error messages. After an error the bytes at out are undefined.
  Status Decode(std::string_view stored, uint32_t mask, char* out, size_t expected, std::string_view what) const;

 private:
  std::vector<Hdf5Filter> filters_;
};

}  // namespace slabfs::stores

#endif  // SLABFS_STORES_HDF5_HDF5_PIPELINE_H_
