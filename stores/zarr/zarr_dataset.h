// The read side of the Zarr store: what it learned of each array when it
// opened (ZarrLayout) and the StoreDataset that reads its chunk files
// through the shared chunk walk (ZarrDataset).
#ifndef SLABFS_STORES_ZARR_ZARR_DATASET_H_
#define SLABFS_STORES_ZARR_ZARR_DATASET_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "stores/chunked_dataset.h"
#include "tools/convert/zarr_metadata.h"

namespace slabfs::stores {

// One array of the store: its chunk grid, the chunk keys present (learned
// when the store opened; a writable store keeps them up to date as it
// writes), with each chunk file's size, and how its chunks are encoded.
// `mu` (ChunkedLayout) guards keys, file_bytes, info's shape, sizes and
// fill, and array.shape, fill and dimension_names; the rest is fixed once
// the store is open.
struct ZarrLayout : ChunkedLayout {
  std::string store;  // the store's path, for messages
  std::string dir;    // the array's directory
  bool v3 = false;    // metadata in zarr.json (else .zarray and .zattrs)
  tools::convert::ZarrArray array;
  std::vector<uint64_t> file_bytes;  // for keys[i]
  // Writable store: why this array cannot be written ("" when it can).
  std::string read_only_reason;
  // Writable store: whether a chunk that holds only the fill value is
  // removed rather than written (Zarr reads a missing chunk as the fill
  // value; not for a v2 array whose fill_value is null, which zarr-python
  // reads as uninitialised memory).
  bool drop_fill_chunks = false;
  // Writable store: chunk files found past the end along the first
  // dimension when the store opened (a shrink interrupted leaves them),
  // not in `keys`; a grow removes them before they would come back into
  // the shape. Guarded by `mu`.
  std::vector<Dims> past_end;
  // Writable store: whether a chunk was written (or left out as all fill)
  // since the store opened. A store keeps no trace of a chunk left out, so
  // after this the fill value stays (it would change what was written).
  // Guarded by `mu`.
  bool written = false;
  // Writable store: the chunks a write since the store opened left out for
  // holding only the fill value (linear positions; none stored, none past
  // the end). What was written there is data: a new fill value stores them
  // first, however many (ZarrWriter::SetFillMarker). Guarded by `mu`.
  std::set<uint64_t> left_out;
  // Writable store: held by one byte-view change at a time
  // (WritableStoreDataset::Exclusively), before `mu`.
  std::mutex change_mu;
};

class ZarrDataset final : public ChunkedDataset {
 public:
  ZarrDataset(std::shared_ptr<const ZarrLayout> layout, std::shared_ptr<engine::ChunkCache> cache, uint64_t cache_id);

  // Reads the chunk file of stored chunk `index` and decodes it with the
  // array's codecs (then big-endian elements swapped, a transposed chunk
  // put in C order). A chunk file removed since the store opened reads as
  // the fill value, as Zarr reads a missing chunk. Corruption naming the
  // store, array and chunk key for a file that is not a regular file, is
  // far larger than the chunk, or does not decode to exactly the chunk.
  Status LoadChunk(size_t index, std::span<const uint64_t> coords, char* out) const override;
  // A chunk file's bytes as stored, where the array's only codec is zlib
  // over little-endian elements in C order (a container's deflate);
  // NotSupported otherwise.
  Result<std::string> ReadEncodedChunk(const Dims& coords, uint32_t* filter_mask) const override;

  using ChunkedDataset::Fill;
  using ChunkedDataset::StoredChunksLocked;

 private:
  uint64_t StoredBytes(size_t index) const override { return layout_->file_bytes[index]; }

  std::shared_ptr<const ZarrLayout> layout_;
};

}  // namespace slabfs::stores

#endif  // SLABFS_STORES_ZARR_ZARR_DATASET_H_
