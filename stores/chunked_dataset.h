// The read side every chunked foreign store shares (the HDF5 store, the
// Zarr store): a dataset split into a grid of chunks, each stored whole
// (edge chunks too) or not at all, where a read walks the chunks the
// selection touches and, for each, fills it with the fill value (not
// stored), copies it from the store's chunk cache, or has the store load
// and decode it (LoadChunk). Reads touching several chunks that need
// decoding, or many bytes, are spread over the engine's thread pool in
// stripes of chunks. StoredChunks and Defined follow the stored chunks.
//
// A store describes a dataset once, when it opens, with a ChunkedLayout
// (usually a struct deriving from it that adds what its LoadChunk needs),
// and implements LoadChunk and DescribeChunk.
//
// Loads are single-flight (ChunkCache::ClaimLoad): concurrent reads that
// miss one chunk (the kernel's read-ahead requests) decode it once.
//
// Thread safety: as StoreDataset (every method from any number of threads;
// LoadChunk must allow that too). The chunk cache is shared by the store's
// datasets; `cache_id` tells them apart in its keys. A store that changes
// a dataset in place (the Zarr store opened for writing) changes its
// layout (shape, keys, sizes) and its chunks only while it holds the
// layout's `mu` exclusively; every read here holds it shared, so a read
// sees each chunk and the shape before or after a change, and no chunk a
// change replaced is left in the cache (the changer drops it under `mu`).
#ifndef SLABFS_STORES_CHUNKED_DATASET_H_
#define SLABFS_STORES_CHUNKED_DATASET_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>

#include "slabfs/store.h"

namespace slabfs::engine {
class ChunkCache;
class TransferPlan;
}  // namespace slabfs::engine

namespace slabfs::stores {

// What a read needs of one dataset, learned when the store opened.
struct ChunkedLayout {
  // Held shared by every read of the fields below, exclusively by a store
  // that changes them. A plain std::shared_mutex, outside the engine's
  // lock order: nothing holds an engine lock when taking it (the chunk
  // cache's and the thread pool's are taken under it).
  mutable std::shared_mutex mu;

  std::string path;  // in the store ("/a/b")
  StoreDatasetInfo info;
  size_t item_size = 1;
  Dims chunk;  // the chunk shape; the shape (at least 1) for a contiguous dataset
  // The stored chunks: linear positions in the chunk grid (C order),
  // sorted. A contiguous dataset has one, at 0, once allocated.
  std::vector<uint64_t> keys;
  // Whether loading a chunk decodes it (reads of several chunks then run
  // on the thread pool).
  bool decodes = false;

  // The index into `keys` of the chunk at linear grid position `linear`,
  // or -1 when it is not stored.
  ptrdiff_t Find(uint64_t linear) const;
  uint64_t chunk_elements() const;
  bool contiguous() const { return info.layout == StoreLayout::kContiguous; }
};

class ChunkedDataset : public StoreDataset {
 public:
  // `layout` outlives nothing: the dataset shares it.
  ChunkedDataset(std::shared_ptr<const ChunkedLayout> layout, std::shared_ptr<engine::ChunkCache> cache,
                 uint64_t cache_id);

  StoreDatasetInfo info() const final;
  const std::string& path() const final { return layout_->path; }
  Status Read(const Slab& sel, void* buf, const MemSpace* mem = nullptr) const final;
  Result<std::vector<StoredChunk>> StoredChunks() const final;
  Result<std::vector<Box>> Defined(const Slab& sel) const final;
  // From the sorted chunk keys: the stored chunks of the band of `at` (the
  // chunks that share its chunk row along the first dimension) and the
  // first stored chunk after that band.
  Result<NextStoredElement> StoredElementFinder() const final;

  // Loads stored chunk `index` (into layout().keys) at grid coordinates
  // `coords` and decodes it into out: the whole chunk, chunk_elements()
  // little-endian elements in C order. Corruption naming the store,
  // dataset and chunk for bytes that do not decode to exactly the chunk;
  // IOError.
  virtual Status LoadChunk(size_t index, std::span<const uint64_t> coords, char* out) const = 0;

 protected:
  // The bytes stored chunk `index` takes in the store (the cache counts
  // them as read).
  virtual uint64_t StoredBytes(size_t index) const = 0;
  // Where stored chunk `index` is kept, for StoredChunks: sets addr, bytes
  // and filter_mask of *c (its coordinates are set already). By default
  // only bytes, from StoredBytes.
  virtual void DescribeChunk(size_t index, StoredChunk* c) const { c->bytes = StoredBytes(index); }
  // A read of a contiguous dataset (layout().contiguous()), whose runs the
  // store may read in place. NotSupported unless a store overrides it.
  virtual Status ReadContiguous(const engine::TransferPlan& plan, char* out) const;

  const ChunkedLayout& layout() const { return *layout_; }
  engine::ChunkCache& cache() const { return *cache_; }
  uint64_t cache_id() const { return cache_id_; }
  // StoredChunks with layout().mu held.
  std::vector<StoredChunk> StoredChunksLocked() const;
  // The dataset's fill value in n elements at dst. Under the layout's mu.
  void Fill(char* dst, uint64_t n) const;

 private:
  Status ReadStripe(const engine::TransferPlan& plan, char* out, size_t stripe, size_t stripes) const;

  std::shared_ptr<const ChunkedLayout> layout_;
  std::shared_ptr<engine::ChunkCache> cache_;
  uint64_t cache_id_;
};

}  // namespace slabfs::stores

#endif  // SLABFS_STORES_CHUNKED_DATASET_H_
