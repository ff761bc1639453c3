// The superblock: the root of one committed state. Two slots at fixed
// offsets; a commit writes generation g into slot g % 2, so the other slot
// keeps the previous commit until this one is durable. Open picks the valid
// slot with the highest generation whose commit reached the disk whole
// (engine/txn/newest_state.h).
//
// A superblock of version 2 carries a commit record after its 128 bytes, in
// the same slot: the extents its commit wrote, each with a CRC-32C of its
// bytes. Such a commit is made with one fdatasync instead of two (the
// superblock may reach the disk before what it references), and is trusted
// only once every listed extent reads back with its checksum
// (docs/format.md, "Commit protocol").
#ifndef SLABFS_ENGINE_FORMAT_SUPERBLOCK_H_
#define SLABFS_ENGINE_FORMAT_SUPERBLOCK_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/format/block.h"
#include "slabfs/status.h"

namespace slabfs::engine {

// Version 1: no commit record (both fdatasyncs made). Version 2: a commit
// record follows. A build reads every version up to kFormatVersion.
constexpr uint32_t kFormatVersion = 2;
constexpr size_t kSuperblockBytes = 128;
// "\x89SLABFS\n": a high byte and a newline catch text-mode mangling.
constexpr char kSuperblockMagic[8] = {'\x89', 'S', 'L', 'A', 'B', 'F', 'S', '\n'};

// One extent a single-flush commit wrote, and the CRC-32C of its bytes.
struct WrittenExtent {
  uint64_t addr = 0;
  uint32_t len = 0;
  uint32_t crc = 0;
  bool operator==(const WrittenExtent&) const = default;
};
constexpr size_t kWrittenExtentBytes = 16;
// What one commit record may list: as many extents as fit in the slot after
// the superblock, of at most kMaxWrittenBytes in all (what an open reads
// back to check them; a commit that wrote more makes both fdatasyncs).
constexpr size_t kMaxWrittenExtents = (4096 - kSuperblockBytes) / kWrittenExtentBytes;
constexpr uint64_t kMaxWrittenBytes = 1ull << 20;

struct Superblock {
  uint64_t generation = 0;
  BlockRef root;       // the root group's object block
  BlockRef free_list;  // empty ref: no free extents
  uint64_t file_end = 0;
  uint64_t next_object_id = 0;
  // The commit record (version 2); empty: the commit made both fdatasyncs
  // and everything it references is durable (version 1).
  std::vector<WrittenExtent> written;
};

// The superblock's 128 bytes, then its commit record when there is one.
std::string EncodeSuperblock(const Superblock& sb);
// Decodes a slot (at least the superblock, and its commit record after it).
// Corruption for a bad magic, version, length, checksum or field.
Result<Superblock> DecodeSuperblock(std::string_view bytes);
// Whether the bytes start with the superblock magic (tells "not a container"
// apart from "a damaged container").
bool HasSuperblockMagic(std::string_view bytes);

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_FORMAT_SUPERBLOCK_H_
