// The superblock: the root of one committed state. Two slots at fixed
// offsets; a commit writes generation g into slot g % 2, so the other slot
// keeps the previous commit until this one is durable. Open picks the valid
// slot with the highest generation.
#ifndef SLABFS_ENGINE_FORMAT_SUPERBLOCK_H_
#define SLABFS_ENGINE_FORMAT_SUPERBLOCK_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/format/block.h"
#include "slabfs/status.h"

namespace slabfs::engine {

constexpr uint32_t kFormatVersion = 1;
constexpr size_t kSuperblockBytes = 128;
// "\x89SLABFS\n": a high byte and a newline catch text-mode mangling.
constexpr char kSuperblockMagic[8] = {'\x89', 'S', 'L', 'A', 'B', 'F', 'S', '\n'};

struct Superblock {
  uint64_t generation = 0;
  BlockRef root;       // the root group's object block
  BlockRef free_list;  // empty ref: no free extents
  uint64_t file_end = 0;
  uint64_t next_object_id = 0;
};

std::string EncodeSuperblock(const Superblock& sb);
// Corruption for a bad magic, version, length, checksum or field.
Result<Superblock> DecodeSuperblock(std::string_view bytes);
// Whether the bytes start with the superblock magic (tells "not a container"
// apart from "a damaged container").
bool HasSuperblockMagic(std::string_view bytes);

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_FORMAT_SUPERBLOCK_H_
