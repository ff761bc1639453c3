// The checksum slabfs computes: CRC-32C (Castagnoli, RFC 3720), as the
// `checksum` filter stores it after each chunk and every metadata block
// carries it. The same function other formats' CRC-32C codecs need (Zarr v3
// `crc32c`). The value of "123456789" is 0xE3069283.
#ifndef SLABFS_CHECKSUM_H_
#define SLABFS_CHECKSUM_H_

#include <cstddef>
#include <cstdint>

namespace slabfs {

// CRC-32C of n bytes (the SSE4.2 instruction where the CPU has it).
uint32_t Crc32c(const void* data, size_t n);

}  // namespace slabfs

#endif  // SLABFS_CHECKSUM_H_
