// Reads and writes metadata blocks in the container, copy-on-write: a block
// is never rewritten in place; Write allocates a new extent and Free hands
// the old one to the allocator (usable again once the commit is durable).
// Thread-safe.
#ifndef SLABFS_ENGINE_TXN_BLOCK_STORE_H_
#define SLABFS_ENGINE_TXN_BLOCK_STORE_H_

#include <string>
#include <string_view>

#include "engine/format/block.h"
#include "engine/io/file.h"
#include "engine/space/allocator.h"

namespace slabfs::engine {

class BlockStore {
 public:
  BlockStore(File* file, Allocator* alloc) : file_(file), alloc_(alloc) {}

  // Reads and verifies a block; returns its payload (and, with `version`,
  // the block's version).
  Result<std::string> Read(const BlockRef& ref, BlockType type, std::string_view what, uint8_t* version = nullptr);
  // The same for a block that may be of either type (a structure whose
  // layout changed with its type); *got says which it is. A block of
  // neither type is Corruption naming `type`.
  Result<std::string> Read(const BlockRef& ref, BlockType type, BlockType other, std::string_view what, BlockType* got);
  // The type of the block at `ref` (read from its header; nothing else is
  // checked: Read does that).
  Result<BlockType> TypeOf(const BlockRef& ref, std::string_view what);
  Result<BlockRef> Write(BlockType type, std::string_view payload, uint8_t version = 1);
  void Free(const BlockRef& ref);

  File* file() const { return file_; }
  Allocator* allocator() const { return alloc_; }

 private:
  // The block's bytes, header and all (at least a header's worth: the
  // reference was checked).
  Result<std::string> ReadImage(const BlockRef& ref, std::string_view what);

  File* file_;
  Allocator* alloc_;
};

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_TXN_BLOCK_STORE_H_
