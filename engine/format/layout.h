// Fixed places in a container file and limits every decoder enforces.
// docs/format.md describes each structure byte by byte.
#ifndef SLABFS_ENGINE_FORMAT_LAYOUT_H_
#define SLABFS_ENGINE_FORMAT_LAYOUT_H_

#include <cstdint>

namespace slabfs::engine {

constexpr uint64_t kSuperblockSlotBytes = 4096;
constexpr uint64_t kSuperblockSlot0 = 0;
constexpr uint64_t kSuperblockSlot1 = 4096;
constexpr uint64_t kLockRecordOffset = 8192;  // informational, names the writer
constexpr uint64_t kLockRecordBytes = 512;
constexpr uint64_t kDataStart = 12288;  // first byte any extent may use

// Advisory locks (fcntl OFD locks; nothing is ever written at these
// offsets). The one writer holds byte kWriterLockByte exclusively; a
// read-only open reading the state of generation g holds byte
// kReaderLockBase + g shared (engine/txn/reader_table.h).
constexpr uint64_t kWriterLockByte = kLockRecordOffset;
constexpr uint64_t kReaderLockBase = 1ull << 62;

// No metadata block is larger than this; a header claiming more is Corruption.
constexpr uint64_t kMaxBlockBytes = 64ull << 20;
// No single chunk is larger than this (uncompressed), so that a corrupt or
// hostile shape can never make the engine allocate without bound.
constexpr uint64_t kMaxChunkBytes = 1ull << 30;

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_FORMAT_LAYOUT_H_
