// The byte shuffle, as HDF5's shuffle filter and numcodecs' Shuffle lay it
// out: byte b of element i goes to b * count + i (all elements' byte 0,
// then all byte 1s, ...); the bytes after the last whole element stay at
// the end as they are. Used by the dataset filter pipeline
// (engine/filter/pipeline.cc) and the Zarr `shuffle` codec
// (tools/convert/zarr_codecs.cc). An item size of 0 or 1 copies.
//
// Thread-safe (pure functions). `in` and `out` must not overlap.
#ifndef SLABFS_ENGINE_FILTER_SHUFFLE_H_
#define SLABFS_ENGINE_FILTER_SHUFFLE_H_

#include <cstddef>

namespace slabfs::engine {

// Shuffles n bytes of elements of item_size bytes from in to out.
void ShuffleBytes(const char* in, size_t n, size_t item_size, char* out);

// The inverse of ShuffleBytes.
void UnshuffleBytes(const char* in, size_t n, size_t item_size, char* out);

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_FILTER_SHUFFLE_H_
