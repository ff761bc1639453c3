// Metadata blocks: every on-disk structure except the superblock and chunk
// data is a block with a 16-byte header that names its type and carries a
// CRC-32C over header and payload.
//
//   0  u32  magic "SLBK"
//   4  u8   type (BlockType)
//   5  u8   version (1; a free list may also be 2, see free_list.h, and a
//           dataset or a group 2, see object.h)
//   6  u16  reserved, 0
//   8  u32  payload length
//   12 u32  CRC-32C of bytes 0..11 and the payload
//   16 ...  payload
//
// A BlockRef (address, total length) names a block; readers check that the
// length matches the header, that the type is the one expected and the
// checksum, before any field of the payload is trusted.
#ifndef SLABFS_ENGINE_FORMAT_BLOCK_H_
#define SLABFS_ENGINE_FORMAT_BLOCK_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "slabfs/status.h"

namespace slabfs::engine {

constexpr size_t kBlockHeaderBytes = 16;
constexpr uint32_t kBlockMagic = 0x4b424c53;  // "SLBK" little-endian

enum class BlockType : uint8_t {
  kGroup = 1,
  kDataset = 2,
  kFixedArrayLeaf = 3,  // the first fixed-array layout: read, never written
  kFixedArrayNode = 4,  // (engine/index/paged_array.h)
  kFreeList = 5,
  kPagedLeaf = 6,  // paged-array index (fixed and extensible arrays)
  kPagedNode = 7,
  kBTreeLeaf = 8,
  kBTreeNode = 9,
  kFreeListDelta = 10,   // free_list.h
  kGroupPage = 11,       // object.h
  kGroupPageTable = 12,  // object.h
};
std::string_view BlockTypeName(BlockType t);

struct BlockRef {
  uint64_t addr = 0;
  uint32_t len = 0;
  bool empty() const { return addr == 0; }
  bool operator==(const BlockRef&) const = default;
};

// The newest version of each block type: 1, 2 for the free list and
// datasets, 3 for groups.
uint8_t MaxBlockVersion(BlockType type);

// Header + payload, ready to write.
std::string EncodeBlock(BlockType type, std::string_view payload, uint8_t version = 1);
// Checks header, type, version (1 .. MaxBlockVersion), length and checksum
// of a whole block image; returns the payload (a view into `image`) and,
// with `version`, the block's version. `what` names the block in messages.
Result<std::string_view> DecodeBlock(std::string_view image, BlockType type, std::string_view what,
                                     uint8_t* version = nullptr);
// Bounds checks on a reference read from disk.
Status CheckBlockRef(const BlockRef& ref, uint64_t file_end, std::string_view what);

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_FORMAT_BLOCK_H_
