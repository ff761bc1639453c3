// slab fsck: checks a container file without trusting any of it.
//
//   auto report = slabfs::CheckContainer("run.slab");
//   if (report && report->damaged()) ...
//
// The check starts at the superblock and walks every structure the last
// commit references: object blocks (groups, datasets, attributes), every
// chunk index block, every stored chunk (read and decoded through its
// filters, so every checksum and zlib stream is verified), and the free
// list. Each byte of [data start, file end) must then be claimed by exactly
// one of them: two claims on one byte are damage (overlapping extents);
// bytes no one claims are leaked space (harmless to the data; slab repack
// gives it back). Counters a dataset header keeps (allocated chunks, stored
// bytes, defined elements, index bytes) are recomputed and compared.
//
// The container is opened read-only and never changed. A check made while a
// writer holds the container sees the last commit but may race the writer's
// next one: the report then says so (a warning), and findings may be false.
#ifndef SLABFS_FSCK_H_
#define SLABFS_FSCK_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "slabfs/status.h"

namespace slabfs {

struct FsckFinding {
  enum class Kind : unsigned char {
    kDamage,   // a structure is unreadable or disagrees with the format
    kLeak,     // bytes that nothing references and the free list omits
    kWarning,  // worth knowing, not wrong (an interrupted commit's leftovers)
  };
  Kind kind = Kind::kDamage;
  std::string where;  // "/run1/temp chunk [3,4]", "free list", "superblock"
  std::string what;   // the problem, one line
  uint64_t addr = 0;  // the file offset concerned, when there is one
  uint64_t bytes = 0;
};

struct FsckStats {
  uint64_t generation = 0;
  uint64_t file_bytes = 0;
  uint64_t file_end = 0;
  uint64_t groups = 0;
  uint64_t datasets = 0;
  uint64_t attributes = 0;
  uint64_t object_blocks = 0, object_bytes = 0;
  uint64_t index_blocks = 0, index_bytes = 0;
  uint64_t chunks = 0, chunk_bytes = 0;
  uint64_t chunks_verified = 0;
  uint64_t free_extents = 0, free_bytes = 0;
  // Blocks the free list is written in: a base and the deltas of the
  // commits since it was written (engine/txn/free_list_log.h).
  uint64_t free_list_blocks = 0;
  // Of the free bytes, those a writer keeps back while readers may still
  // read an older commit (freed by a recent commit).
  uint64_t held_bytes = 0;
  uint64_t leaked_bytes = 0;
};

struct FsckReport {
  FsckStats stats;
  std::vector<FsckFinding> findings;

  bool damaged() const;
  bool leaks() const;
  bool clean() const { return !damaged() && !leaks(); }
};

struct FsckOptions {
  // Read and decode every stored chunk (off: only the structures above them,
  // and the chunks' extents).
  bool verify_data = true;
  // Called after each chunk with the chunk bytes checked so far and the
  // total the dataset headers announce; answering false stops the check
  // (CheckContainer then answers the error `stopped`).
  std::function<bool(uint64_t done, uint64_t total)> progress;
};

// The report on the container at `path`. An error only when the file cannot
// be read at all (missing, a directory, permission); a file that is not a
// container is a report with a damage finding.
Result<FsckReport> CheckContainer(const std::string& path, const FsckOptions& options = {});

std::string_view FindingKindName(FsckFinding::Kind k);

}  // namespace slabfs

#endif  // SLABFS_FSCK_H_
