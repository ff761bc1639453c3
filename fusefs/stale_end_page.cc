#include "fusefs/stale_end_page.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "fusefs/filesystem.h"
#include "fusefs/log.h"
#include "fusefs/request.h"

namespace slabfs::fusefs {

PageRange StaleEndPage(std::string_view fill, uint64_t old_size, uint64_t written_from, uint64_t page_size) {
  if (page_size == 0 || old_size % page_size == 0 || written_from <= old_size) return {};
  if (std::all_of(fill.begin(), fill.end(), [](char b) { return b == 0; })) return {};
  const uint64_t first = old_size - old_size % page_size;
  return {first, first + page_size};
}

void DropStaleEndPage(Filesystem& fs, fuse_ino_t ino, std::string_view fill, uint64_t old_size, uint64_t written_from,
                      uint64_t request_first, uint64_t request_end) {
  static const auto kPage = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const PageRange stale = StaleEndPage(fill, old_size, written_from, kPage);
  if (stale.empty()) return;
  const auto first = static_cast<int64_t>(stale.first);
  const auto length = static_cast<int64_t>(stale.end - stale.first);
  if (request_first < stale.end && stale.first < request_end) {
    // The answering write holds this page locked: dropped as the answer
    // lands, and again a little later.
    fs.invalidator.Post(ino, first, length, std::chrono::milliseconds(0));
    fs.invalidator.Post(ino, first, length, kRedropDelay);
    return;
  }
  const int err = fs.invalidator.Invalidate(ino, first, length, kInvalidateWait);
  if (err != 0 && err != -ENOENT) {
    Log().info("cache invalidation of {} [{}, {}) after it grew not confirmed: {}", Describe(fs, ino), stale.first,
               stale.end, std::strerror(-err));
  }
}

}  // namespace slabfs::fusefs
