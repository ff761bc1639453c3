// An HDF5 or netCDF-4 file as a store (include/slabfs/store.h), read-only.
//
// Opening walks the file once with libhdf5 (under one process-wide lock,
// since libhdf5 is not thread-safe): the tree, the attributes, and for
// every dataset it can read its layout and where its bytes are, the chunk
// map of a chunked dataset (each stored chunk's address, size and filter
// mask, from H5Dget_num_chunks / H5Dget_chunk_info) or the extent of a
// contiguous one (H5Dget_offset). After that libhdf5 is never called: a
// read preads the raw chunks, decodes them with slabfs's own codecs
// (deflate, shuffle, Fletcher-32 verified), converts big-endian elements to
// little-endian, and keeps decoded chunks in the store's chunk cache (one
// budget for the store; chunks read whole into the caller's buffer bypass
// it). Decoding of several chunks runs on the engine's thread pool.
//
// What it does not read is absent from the tree and listed by Skipped(),
// with a log line (a compact dataset's few bytes are read with libhdf5 when
// the store opens and kept): virtual and external layouts, filters other
// than deflate, shuffle and fletcher32 (szip, n-bit, scale-offset,
// plugins such as blosc or lzf: libhdf5 loads no plugin while the store
// opens), types other than 1-8 byte integers and IEEE floats (strings,
// compound, enum, references, variable-length), null dataspaces, datasets
// whose edge chunks are stored unfiltered, attributes slabfs cannot hold.
// netCDF-4 is read as the import reads it: dimensions without a variable
// are not data and do not appear; "_nc4_non_coord_x" appears as "x"; the
// dimension names become the attribute _ARRAY_DIMENSIONS (a JSON list);
// netCDF's and the dimension scale API's bookkeeping attributes are hidden.
//
// The file is never written. A file another program holds open for
// writing is refused by libhdf5's file lock (and one a writer left marked
// open, by its consistency flags). The chunk map is learned once: a SWMR
// writer's later appends are not seen (no follow mode yet).
//
// Bytes of the file are untrusted: chunk extents past the end of the file,
// stored sizes that cannot be the chunk's, streams that do not inflate to
// exactly the chunk, and checksum mismatches are Corruption naming the
// file, dataset and chunk; nothing of a damaged chunk is returned as data.
#ifndef SLABFS_STORES_HDF5_HDF5_STORE_H_
#define SLABFS_STORES_HDF5_HDF5_STORE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "slabfs/store.h"

namespace slabfs::stores {

struct Hdf5StoreOptions {
  // The chunk cache's budget (decoded chunks), a hard bound.
  uint64_t cache_bytes = 64ull << 20;
};

// Errors: NotFound (no file), Corruption (not an HDF5 file, or libhdf5
// cannot open it: truncated, damaged superblock, marked open by a writer),
// Busy-like refusals of libhdf5's file lock come back as Corruption with
// libhdf5's reason, IOError.
Result<std::unique_ptr<Store>> OpenHdf5Store(const std::string& path, const Hdf5StoreOptions& options = {});

}  // namespace slabfs::stores

#endif  // SLABFS_STORES_HDF5_HDF5_STORE_H_
