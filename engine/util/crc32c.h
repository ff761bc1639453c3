// CRC-32C (Castagnoli), the checksum of every metadata block and superblock.
#ifndef SLABFS_ENGINE_UTIL_CRC32C_H_
#define SLABFS_ENGINE_UTIL_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace slabfs::engine {

// Extends `crc` (0 to start) over n bytes. Uses the SSE4.2 instruction when
// the CPU has it, else a table-driven loop; both give the same value.
uint32_t Crc32c(uint32_t crc, const void* data, size_t n);
inline uint32_t Crc32c(const void* data, size_t n) { return Crc32c(0, data, n); }

// Whether a checksum read from disk matches the one computed. Every reader
// asks here. A fuzzing build (cmake -DSLABFS_FUZZ=ON, never installed)
// accepts any value, so that mutated inputs reach the decoders behind the
// checksums instead of stopping at them.
inline bool ChecksumMatches(uint32_t stored, uint32_t computed) {
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  (void)stored;
  (void)computed;
  return true;
#else
  return stored == computed;
#endif
}

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_UTIL_CRC32C_H_
