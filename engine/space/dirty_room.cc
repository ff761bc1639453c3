#include "engine/space/dirty_room.h"

#include <string>

namespace slabfs::engine {

Status DirtyRoom::Check(uint64_t dirty_after, uint64_t container_free) {
  // Write-back rounds chunks up to their alignment, and the commit writes
  // index and object blocks besides the chunks.
  const uint64_t margin = dirty_after / 32 + (1u << 20);
  const uint64_t need = dirty_after > UINT64_MAX - margin ? UINT64_MAX : dirty_after + margin;
  std::lock_guard lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  const uint64_t room = disk_free_ > UINT64_MAX - container_free ? UINT64_MAX : disk_free_ + container_free;
  const bool near = !known_ || need > room / 2;
  if (near || now - read_at_ > std::chrono::milliseconds(100)) {
    auto disk = space_of_(path_);
    // No path to ask, or a filesystem that reports no size (some FUSE
    // filesystems answer statvfs with zeros): refuse nothing.
    if (!disk || disk->total_bytes == 0) return Status::OK();
    known_ = true;
    disk_free_ = disk->free_bytes;
    read_at_ = now;
  }
  if (need <= disk_free_ || need - disk_free_ <= container_free) return Status::OK();
  return Status::NoSpace("no space for " + std::to_string(dirty_after) +
                         " bytes of changes in the chunk cache: " + std::to_string(disk_free_) +
                         " bytes free on the disk of " + path_ + " and " + std::to_string(container_free) +
                         " in the container");
}

}  // namespace slabfs::engine
