// Space in and around a container file: SpaceInfo.
#ifndef SLABFS_SPACE_INFO_H_
#define SLABFS_SPACE_INFO_H_

#include <cstdint>
#include <string_view>

namespace slabfs {

struct SpaceInfo {
  uint64_t file_bytes = 0;       // size of the container file
  uint64_t free_bytes = 0;       // free extents inside it
  uint64_t disk_free_bytes = 0;  // free on the filesystem holding it
  uint64_t disk_total_bytes = 0;
  uint64_t num_objects = 0;
  uint64_t generation = 0;  // commits so far
  // Free extents a writer keeps back because a reader may still read an
  // older commit that uses them (included in free_bytes).
  uint64_t held_bytes = 0;
  // Bytes the free list itself takes: a base and the deltas of the commits
  // since it was written (engine/txn/free_list_log.h; at most 64 deltas).
  uint64_t free_list_bytes = 0;
};

// Calls f(name, value) for every figure, in the order above, named as the
// members are (Python's File.space() shows all but free_list_bytes).
template <class F>
void VisitFields(const SpaceInfo& s, F&& f) {
  using N = std::string_view;
  f(N("file_bytes"), s.file_bytes);
  f(N("free_bytes"), s.free_bytes);
  f(N("disk_free_bytes"), s.disk_free_bytes);
  f(N("disk_total_bytes"), s.disk_total_bytes);
  f(N("num_objects"), s.num_objects);
  f(N("generation"), s.generation);
  f(N("held_bytes"), s.held_bytes);
  f(N("free_list_bytes"), s.free_list_bytes);
}

}  // namespace slabfs

#endif  // SLABFS_SPACE_INFO_H_
