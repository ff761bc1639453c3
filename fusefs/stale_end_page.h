// The kernel's cached page at a file's old end, after the file grew.
//
// The kernel caches the last page of a file with zeros past the end. When
// a write past the end leaves a gap, or fallocate grows the file, the
// dataset reads its fill value in the gap, but the kernel keeps that page
// (the size it cached may not even change) and goes on serving zeros there:
// `od` shows them, and an `np.memmap` flush of the page writes them into
// the dataset for good. Where the fill value is not zero, the daemon drops
// the page. A write's own pages stay locked by the kernel until the daemon
// answers, so a drop of a page the write covers is queued on the
// invalidator's thread and happens as the answer lands (and once more a
// little later, in case a read brought the page back meanwhile); any other
// page is dropped before the answer, waiting a bounded time (invalidator.h).
#ifndef SLABFS_FUSEFS_STALE_END_PAGE_H_
#define SLABFS_FUSEFS_STALE_END_PAGE_H_

#include <fuse_lowlevel.h>

#include <cstdint>
#include <string_view>

namespace slabfs::fusefs {

struct Filesystem;

// The byte range [first, end) of the page that holds byte `old_size - 1`
// (the old end) and must be dropped, or an empty range when nothing is
// stale: the fill value is all zero bytes, the old end is page-aligned (no
// page holds bytes past it), nothing is left unwritten after the old end
// (`written_from` <= old_size), or the file is empty.
struct PageRange {
  uint64_t first = 0;
  uint64_t end = 0;
  bool empty() const { return end <= first; }
};
PageRange StaleEndPage(std::string_view fill, uint64_t old_size, uint64_t written_from, uint64_t page_size);

// After the file of `ino` grew from old_size and the bytes from old_size
// to written_from were not written (they read as the fill value): drops
// the kernel's page at the old end where it is stale. [request_first,
// request_end): the bytes the answering request holds locked in the
// kernel (a write's), or an empty range (fallocate).
void DropStaleEndPage(Filesystem& fs, fuse_ino_t ino, std::string_view fill, uint64_t old_size, uint64_t written_from,
                      uint64_t request_first, uint64_t request_end);

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_STALE_END_PAGE_H_
