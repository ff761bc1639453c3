// The chunk format layer (the sparse-chunks RFC, section 6): everything
// that knows how one chunk is represented, in memory and in the file.
//
// The code above it (selections, the chunk cache, the chunk index, the
// allocator) moves two kinds of object and never looks inside either:
//   - a memory chunk: what the cache holds, a buffer of MemBytes(n) bytes
//     for a chunk of n elements (its stored extent, see TransferPlan);
//   - a file chunk: the image of the chunk as stored, written and read as
//     one extent; with variable_size() its size is in the chunk's index
//     record (with a mask of skipped filters), else it follows from n.
// Moving selected elements between a memory chunk and the caller's buffer,
// and filling, also go through the format.
//
// Formats:
//   dense          memory chunk = file chunk = the elements in C order.
//                  Fixed size on disk; direct_io(): a read or write of part
//                  of an uncached chunk goes straight to the file bytes it
//                  needs (FileRead/FileWrite) instead of loading the chunk.
//   dense filtered memory chunk = the elements in C order; file chunk = the
//                  output of the dataset's filter pipeline. Variable size;
//                  always whole-chunk I/O through the cache.
//   sparse         memory chunk = the elements in C order (undefined ones
//                  hold the fill value) and the set of defined elements;
//                  file chunk = u32 encoded size, u32 defined count, then
//                  the encoding of sparse_chunk.h through the filters.
//                  Variable size; whole-chunk I/O through the cache; a
//                  chunk left with no defined element is freed.
#ifndef SLABFS_ENGINE_CHUNK_CHUNK_FORMAT_H_
#define SLABFS_ENGINE_CHUNK_CHUNK_FORMAT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "engine/filter/pipeline.h"
#include "engine/io/file.h"
#include "engine/selection/hyperslab.h"

namespace slabfs::engine {

class ChunkCache;

// What a format needs for file I/O: the file and the cache (for its byte
// counters). Errors do not name the chunk; the caller adds that.
struct ChunkIo {
  File* file = nullptr;
  ChunkCache* cache = nullptr;
};

// A file chunk ready to be stored: its bytes (a view of the memory chunk
// itself or of the scratch buffer given to MemToFile) and filter mask.
struct FileImage {
  std::string_view bytes;
  uint32_t filter_mask = 0;
  uint64_t defined = 0;  // formats that track defined elements: how many
};

class ChunkFormat {
 public:
  // The format of a dataset's chunks: sparse when `sparse`, else dense
  // filtered when the pipeline has filters, else dense. `fill` holds one
  // element.
  static std::unique_ptr<ChunkFormat> ForDataset(size_t item_size, std::string fill, FilterPipeline filters,
                                                 bool sparse = false);
  virtual ~ChunkFormat() = default;

  virtual std::string_view name() const = 0;
  // File chunks vary in size: their records hold size and filter mask.
  virtual bool variable_size() const = 0;
  // FileRead/FileWrite are available.
  virtual bool direct_io() const = 0;
  // Chunks keep a set of defined elements (sparse); in the other formats
  // every element of a stored chunk is defined.
  virtual bool tracks_defined() const { return false; }
  size_t item_size() const { return item_size_; }

  // Bytes of the memory chunk of a chunk of n elements.
  virtual uint64_t MemBytes(uint64_t n) const { return n * item_size_; }
  // The most bytes a file chunk of n elements may take. A record claiming
  // more is Corruption, refused before anything is read or allocated.
  virtual uint64_t MaxFileBytes(uint64_t n) const = 0;

  // A memory chunk of n elements that all read as the fill value (and, in
  // a sparse chunk, none defined): what an unallocated chunk is.
  virtual void MemFill(char* mem, uint64_t n) const { FillBytes(mem, n); }
  // The selected elements of an unallocated chunk, straight into the
  // caller's buffer.
  void FillSelected(const ChunkCursor& cur, char* buf) const;
  // n fill values at dst.
  void FillBytes(char* dst, uint64_t n) const;

  // Reads the file chunk at addr (file_bytes long, as its record says) and
  // turns it into the memory chunk `mem` of n elements. The bytes read are
  // untrusted: anything that does not decode to exactly the chunk is
  // Corruption.
  virtual Status Load(const ChunkIo& io, uint64_t addr, uint64_t file_bytes, uint32_t filter_mask, char* mem,
                      uint64_t n) const = 0;
  // Turns a memory chunk of n elements into the file chunk to store.
  // `scratch` may receive the bytes; the image is valid while mem and
  // scratch are. An empty image means there is nothing to store (a sparse
  // chunk with no defined element): the chunk is freed.
  virtual FileImage MemToFile(const char* mem, uint64_t n, std::string* scratch) const = 0;

  // The selected elements between a memory chunk of n elements and the
  // caller's buffer. Writing defines the elements.
  void MemRead(const char* mem, const ChunkCursor& cur, char* buf) const;
  virtual void MemWrite(char* mem, uint64_t n, const ChunkCursor& cur, const char* buf) const;
  // Makes the selected elements (or the chunk offsets [first, first+count))
  // undefined: they read as the fill value.
  void MemErase(char* mem, uint64_t n, const ChunkCursor& cur) const;
  virtual void MemEraseRange(char* mem, uint64_t n, uint64_t first, uint64_t count) const;
  // The runs of defined elements of a memory chunk among the chunk offsets
  // [first, end). (How many a chunk holds comes with its FileImage.)
  virtual void MemDefinedRuns(const char* mem, uint64_t n, uint64_t first, uint64_t end,
                              const std::function<void(uint64_t, uint64_t)>& f) const;
  // Loads only what MemDefinedRuns looks at (the defined
  // set; other bytes of mem are left as they are), reading no element
  // values where the format can (sparse without filters). The other
  // formats load the whole chunk.
  virtual Status LoadDefined(const ChunkIo& io, uint64_t addr, uint64_t file_bytes, uint32_t filter_mask, char* mem,
                             uint64_t n) const {
    return Load(io, addr, file_bytes, filter_mask, mem, n);
  }
  // Defined elements of a stored chunk, without decoding its values.
  virtual Result<uint64_t> StoredDefined(const ChunkIo& io, uint64_t addr, uint64_t file_bytes, uint64_t n) const;

  // Direct I/O between the caller's buffer and the selected elements of a
  // stored chunk, without loading it. Only where direct_io().
  virtual Status FileRead(const ChunkIo& io, uint64_t addr, const ChunkCursor& cur, char* buf) const;
  virtual Status FileWrite(const ChunkIo& io, uint64_t addr, const ChunkCursor& cur, const char* buf) const;

 protected:
  ChunkFormat(size_t item_size, std::string fill);
  const std::string& fill() const { return fill_; }

 private:
  const size_t item_size_;
  const std::string fill_;
  const bool fill_is_zero_;
};

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_CHUNK_CHUNK_FORMAT_H_
