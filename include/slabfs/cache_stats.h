// The chunk cache's counters: CacheStats.
#ifndef SLABFS_CACHE_STATS_H_
#define SLABFS_CACHE_STATS_H_

#include <cstdint>
#include <string_view>

namespace slabfs {

struct CacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t bytes_read = 0;     // chunk bytes read from the container file
  uint64_t bytes_written = 0;  // chunk bytes written to the container file
  uint64_t evictions = 0;
  uint64_t bypass_reads = 0;   // chunk reads that went straight to the caller
  uint64_t bypass_writes = 0;  // chunk writes that went straight to the file
  // Byte-view reads answered with file extents instead of bytes
  // (Dataset::WithFileExtents: the mount's spliced replies).
  uint64_t extent_reads = 0;
  uint64_t resident_bytes = 0;
  uint64_t budget_bytes = 0;
};

// Calls f(name, value) for every counter, in the order above, with the
// names the front ends show (user.slab.cache on a mount's root, Python's
// File.cache_stats()), so that none lists the counters by hand.
template <class F>
void VisitFields(const CacheStats& s, F&& f) {
  using N = std::string_view;
  f(N("hits"), s.hits);
  f(N("misses"), s.misses);
  f(N("bytes_read"), s.bytes_read);
  f(N("bytes_written"), s.bytes_written);
  f(N("evictions"), s.evictions);
  f(N("bypass_reads"), s.bypass_reads);
  f(N("bypass_writes"), s.bypass_writes);
  f(N("extent_reads"), s.extent_reads);
  f(N("resident_bytes"), s.resident_bytes);
  f(N("budget_bytes"), s.budget_bytes);
}

}  // namespace slabfs

#endif  // SLABFS_CACHE_STATS_H_
