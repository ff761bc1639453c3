#include "fusefs/file_attr.h"

namespace slabfs::fusefs {

mode_t ModeFor(ObjectKind kind, bool read_only) {
  if (kind == ObjectKind::kGroup) return S_IFDIR | 0755;
  return S_IFREG | (read_only ? 0444 : 0644);
}

struct stat MakeStat(const ObjectInfo& info, const StatContext& ctx, const timespec& mtime) {
  struct stat st {};
  st.st_ino = info.id;
  st.st_mode = ModeFor(info.kind, ctx.read_only);
  st.st_nlink = 1;
  st.st_uid = ctx.uid;
  st.st_gid = ctx.gid;
  st.st_blksize = kPreferredIoBytes;
  if (info.kind == ObjectKind::kDataset) {
    st.st_size = static_cast<off_t>(info.size_bytes);
    st.st_blocks = static_cast<blkcnt_t>(info.stored_bytes / 512 + (info.stored_bytes % 512 != 0));
  }
  st.st_atim = mtime;
  st.st_mtim = mtime;
  st.st_ctim = mtime;
  return st;
}

}  // namespace slabfs::fusefs
