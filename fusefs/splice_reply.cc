#include "fusefs/splice_reply.h"

#include <fcntl.h>
#include <unistd.h>

#include <memory>
#include <span>
#include <vector>

namespace slabfs::fusefs {

bool CanSpliceReplies(size_t max_reply) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return false;
  // What libfuse asks for: the reply, its header, and a page per piece.
  const long page = sysconf(_SC_PAGESIZE);
  const long want = static_cast<long>(max_reply) + page * static_cast<long>(kMaxSplicedRuns + 3);
  const long got = fcntl(p[0], F_SETPIPE_SZ, want);
  close(p[0]);
  close(p[1]);
  return got >= want;
}

bool ShouldSpliceReplies(size_t max_request, bool allowed, bool kernel_can) {
  return allowed && kernel_can && CanSpliceReplies(max_request);
}

Result<bool> ReplyFromFile(fuse_req_t req, const Dataset& ds, uint64_t off, size_t size) {
  return ds.WithFileExtents(off, size, kMaxSplicedRuns, [&](int fd, std::span<const Dataset::FileExtent> runs) {
    // fuse_bufvec ends in a one-element array; room for the rest follows it.
    thread_local std::vector<unsigned char> storage;
    storage.resize(sizeof(fuse_bufvec) + runs.size() * sizeof(fuse_buf));
    auto* bv = new (storage.data()) fuse_bufvec{};
    bv->count = runs.size();
    for (size_t i = 0; i < runs.size(); ++i) {
      fuse_buf& b = bv->buf[i];
      b = fuse_buf{};
      b.size = runs[i].length;
      b.flags = static_cast<fuse_buf_flags>(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
      b.fd = fd;
      b.pos = static_cast<off_t>(runs[i].offset);
    }
    // A failure to send is the request's end either way (libfuse answers an
    // error it met itself), as with fuse_reply_buf.
    fuse_reply_data(req, bv, static_cast<fuse_buf_copy_flags>(0));
  });
}

}  // namespace slabfs::fusefs
