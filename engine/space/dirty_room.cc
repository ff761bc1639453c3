#include "engine/space/dirty_room.h"

#include <string>

namespace slabfs::engine {

namespace {

constexpr auto kFresh = std::chrono::milliseconds(100);

// What `dirty` bytes of changes need on disk: write-back rounds chunks up
// to their alignment, and the commit writes index and object blocks
// besides the chunks.
uint64_t Need(uint64_t dirty) {
  const uint64_t margin = dirty / 32 + (1u << 20);
  return dirty > UINT64_MAX - margin ? UINT64_MAX : dirty + margin;
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

bool DirtyRoom::Roomy(uint64_t dirty_after) const {
  const uint64_t free = fast_free_.load(std::memory_order_relaxed);
  if (free == 0) return false;
  if (NowNs() - fast_read_at_ns_.load(std::memory_order_relaxed) > std::chrono::nanoseconds(kFresh).count())
    return false;
  return Need(dirty_after) <= free / 2;
}

Status DirtyRoom::Check(uint64_t dirty_after, uint64_t container_free) {
  const uint64_t need = Need(dirty_after);
  MutexLock lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  const uint64_t room = disk_free_ > UINT64_MAX - container_free ? UINT64_MAX : disk_free_ + container_free;
  const bool near = !known_ || need > room / 2;
  if (near || now - read_at_ > kFresh) {
    auto disk = space_of_(path_);
    // No path to ask, or a filesystem that reports no size (some FUSE
    // filesystems answer statvfs with zeros): refuse nothing.
    if (!disk || disk->total_bytes == 0) return Status::OK();
    known_ = true;
    disk_free_ = disk->free_bytes;
    read_at_ = now;
    fast_free_.store(disk_free_, std::memory_order_relaxed);
    fast_read_at_ns_.store(NowNs(), std::memory_order_relaxed);
  }
  if (need <= disk_free_ || need - disk_free_ <= container_free) return Status::OK();
  return Status::NoSpace("no space for " + std::to_string(dirty_after) + " bytes of changes in the chunk cache: " +
                         std::to_string(disk_free_) + " bytes free on the disk of " + path_ + " and " +
                         std::to_string(container_free) + " in the container");
}

}  // namespace slabfs::engine
