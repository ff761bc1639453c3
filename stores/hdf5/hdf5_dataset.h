// The read side of the HDF5 store: the file it preads, what it learned of
// each dataset when it opened (DatasetLayout), and the StoreDataset that
// reads through them without libhdf5 (Hdf5Dataset).
#ifndef SLABFS_STORES_HDF5_HDF5_DATASET_H_
#define SLABFS_STORES_HDF5_HDF5_DATASET_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "slabfs/store.h"
#include "stores/chunked_dataset.h"
#include "stores/hdf5/hdf5_pipeline.h"

namespace slabfs::stores {

// Where one chunk is stored, as libhdf5's chunk map gives it (untrusted
// until read: the address and size are checked against the file then).
struct ChunkRecord {
  uint64_t addr = 0;
  uint64_t bytes = 0;
  uint32_t filter_mask = 0;
};

// The file the store reads, open read-only for as long as any dataset of
// the store is. Thread-safe (positional reads only).
class SourceFile {
 public:
  // NotFound, InvalidArgument (not a regular file), IOError.
  static Result<std::shared_ptr<SourceFile>> Open(const std::string& path);
  ~SourceFile();
  SourceFile(const SourceFile&) = delete;
  SourceFile& operator=(const SourceFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }  // at open
  // Whether a file with this device and inode number is this one.
  bool SameFile(uint64_t dev, uint64_t ino) const { return dev == dev_ && ino == ino_; }
  // Bytes [addr, addr + n) into out. Corruption ("what: stored at byte A,
  // N bytes, past the end of the file (S bytes)") when they reach past the
  // size the file had at open, or the file has since become shorter;
  // IOError when the system refuses.
  Status ReadAt(uint64_t addr, size_t n, char* out, std::string_view what) const;

 private:
  SourceFile(std::string path, int fd, uint64_t size, uint64_t dev, uint64_t ino)
      : path_(std::move(path)), fd_(fd), size_(size), dev_(dev), ino_(ino) {}
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  uint64_t dev_ = 0, ino_ = 0;
};

// What a read needs of one dataset, learned once when the store opened:
// the chunked layout and, for each stored chunk, where it is (records[i]
// for keys[i]) and how it is filtered.
struct DatasetLayout : ChunkedLayout {
  bool swap_bytes = false;  // the source is big-endian
  // A compact dataset: its elements (little-endian) were read from the
  // object header when the store opened; the one record is that data.
  bool in_header = false;
  std::string header_data;
  Hdf5Pipeline pipeline;
  std::vector<ChunkRecord> records;
};

// Reads through the shared chunk walk (ChunkedDataset); a contiguous
// dataset's runs are pread in place.
class Hdf5Dataset final : public ChunkedDataset {
 public:
  Hdf5Dataset(std::shared_ptr<const DatasetLayout> layout, std::shared_ptr<const SourceFile> file,
              std::shared_ptr<engine::ChunkCache> cache, uint64_t cache_id);

  // Reads one stored chunk and decodes it into out (the whole chunk, in
  // little-endian elements). Corruption naming the file, dataset and chunk
  // for an extent past the end of the file, a size that cannot be the
  // chunk's, or bytes that do not decode.
  Status LoadChunk(size_t index, std::span<const uint64_t> coords, char* out) const override;
  // A chunk's bytes as stored, where the pipeline is deflate alone or
  // shuffle then deflate over little-endian elements (what a container
  // with those filters stores); NotSupported otherwise.
  Result<std::string> ReadEncodedChunk(const Dims& coords, uint32_t* filter_mask) const override;

 private:
  uint64_t StoredBytes(size_t index) const override { return layout_->records[index].bytes; }
  void DescribeChunk(size_t index, StoredChunk* c) const override;
  Status ReadContiguous(const engine::TransferPlan& plan, char* out) const override;
  std::string ChunkName(std::span<const uint64_t> coords) const;

  std::shared_ptr<const DatasetLayout> layout_;
  std::shared_ptr<const SourceFile> file_;
};

// Converts n elements of item_size bytes from the other byte order, in place.
void SwapBytes(char* data, uint64_t n, size_t item_size);

}  // namespace slabfs::stores

#endif  // SLABFS_STORES_HDF5_HDF5_DATASET_H_
