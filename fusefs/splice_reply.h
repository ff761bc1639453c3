// Read replies spliced from the container file.
//
// A read of unfiltered data whose bytes lie in a few runs of the container
// file (row-shaped chunks: a 1 MiB request is one or two runs) is answered
// by handing libfuse the runs as file-descriptor buffers: it splices them
// from the container file's page cache into a pipe and from the pipe into
// /dev/fuse, so the bytes are copied once, by the kernel, instead of read
// into a buffer of the daemon's and written out of it. Anything else (many
// short runs, filtered or sparse chunks, chunks the cache holds) is read
// and copied as before; Dataset::WithFileExtents decides.
//
// libfuse splices only through a pipe that holds the whole reply plus a
// page per piece; for 1 MiB requests that is above the default
// /proc/sys/fs/pipe-max-size (1 MiB), which only a daemon with
// CAP_SYS_RESOURCE may exceed (root in a container often lacks it). Where
// it cannot, libfuse would copy the pieces into a buffer it allocates per
// reply, worse than reading them ourselves, so splicing is used only where
// a pipe of that size can be made (probed once at init).
#ifndef SLABFS_FUSEFS_SPLICE_REPLY_H_
#define SLABFS_FUSEFS_SPLICE_REPLY_H_

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <cstddef>
#include <cstdint>

#include "slabfs/container.h"

namespace slabfs::fusefs {

// The most runs of the file one spliced reply carries.
inline constexpr size_t kMaxSplicedRuns = 16;

// Whether replies of up to max_reply bytes in kMaxSplicedRuns pieces can be
// spliced by this process (see above).
bool CanSpliceReplies(size_t max_reply);

// Whether to splice replies, chosen once at init: only where whole replies
// to the largest request (max_request bytes) can be spliced. Where they
// cannot (the default pipe-max-size, no CAP_SYS_RESOURCE), halving the
// requests would let half-size replies be spliced, but it costs every read
// that cannot be spliced (256 x 256 chunks: 1.72 -> 1.50 GB/s) and halves
// the writes, so the daemon copies instead; `sysctl fs.pipe-max-size=
// 2097152` lets an unprivileged daemon splice. `allowed` is false with -o
// nosplice, `kernel_can` when libfuse offers FUSE_CAP_SPLICE_WRITE.
bool ShouldSpliceReplies(size_t max_request, bool allowed, bool kernel_can);

// Answers the read [off, off + size) of `ds` with a spliced reply if its
// bytes qualify; true if it replied. An error is the engine's (the caller
// refuses the read with it).
Result<bool> ReplyFromFile(fuse_req_t req, const Dataset& ds, uint64_t off, size_t size);

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_SPLICE_REPLY_H_
