// HDF5's Fletcher-32 checksum (filter id 3), as its filter pipeline
// appends it to a chunk: the data is read as 16-bit words, each made of
// two bytes with the first byte high (an odd last byte is a word with a
// zero low byte); sum1 adds the words and sum2 adds the running sum1,
// both modulo 65535 with a nonzero sum kept as 65535 rather than 0; the
// checksum is sum2 << 16 | sum1, stored after the data as 4 bytes,
// little-endian. Used by the HDF5 store (stores/hdf5/), which verifies
// it on every chunk it reads.
//
// Thread-safe (a pure function).
#ifndef SLABFS_ENGINE_FILTER_FLETCHER32_H_
#define SLABFS_ENGINE_FILTER_FLETCHER32_H_

#include <cstddef>
#include <cstdint>

namespace slabfs::engine {

uint32_t Fletcher32(const void* data, size_t n);

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_FILTER_FLETCHER32_H_
