// nullfs: a do-nothing FUSE filesystem, the baseline for bench/mount_bench.sh.
// It serves one file, /data, of the given size whose bytes are all zero,
// replying to every read from one static buffer: the cost of FUSE itself.
//
// With --file PATH it serves PATH's bytes instead, each read answered with
// one pread into a buffer and a reply from it: the least a FUSE filesystem
// that copies real bytes does (the daemon reads every byte from memory once,
// which the zeros of a static buffer never cost).
//
//   nullfs MOUNTPOINT SIZE_BYTES [-f] [--file PATH]
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include <fcntl.h>
#include <unistd.h>

namespace {

off_t g_size = 0;
constexpr fuse_ino_t kDataIno = 2;
char g_zeros[1 << 20];
int g_file = -1;  // --file: the file whose bytes are served

void Stat(fuse_ino_t ino, struct stat* st) {
  std::memset(st, 0, sizeof *st);
  st->st_ino = ino;
  if (ino == FUSE_ROOT_ID) {
    st->st_mode = S_IFDIR | 0755;
    st->st_nlink = 2;
  } else {
    st->st_mode = S_IFREG | 0444;
    st->st_nlink = 1;
    st->st_size = g_size;
  }
}

void Init(void*, struct fuse_conn_info* conn) {
  conn->max_write = 1u << 20;
  if (conn->capable & FUSE_CAP_ASYNC_READ) conn->want |= FUSE_CAP_ASYNC_READ;
}

void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  if (parent != FUSE_ROOT_ID || std::strcmp(name, "data") != 0) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  struct fuse_entry_param e {};
  e.ino = kDataIno;
  e.attr_timeout = e.entry_timeout = 60;
  Stat(kDataIno, &e.attr);
  fuse_reply_entry(req, &e);
}

void GetAttr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info*) {
  if (ino != FUSE_ROOT_ID && ino != kDataIno) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  struct stat st;
  Stat(ino, &st);
  fuse_reply_attr(req, &st, 60);
}

void Open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  if (ino != kDataIno) {
    fuse_reply_err(req, EISDIR);
    return;
  }
  fuse_reply_open(req, fi);
}

void Read(fuse_req_t req, fuse_ino_t, size_t size, off_t off, struct fuse_file_info*) {
  if (off >= g_size) {
    fuse_reply_buf(req, nullptr, 0);
    return;
  }
  size_t n = std::min<size_t>({size, static_cast<size_t>(g_size - off), sizeof g_zeros});
  if (g_file < 0) {
    fuse_reply_buf(req, g_zeros, n);
    return;
  }
  thread_local std::unique_ptr<char[]> buf(new char[sizeof g_zeros]);
  const ssize_t got = pread(g_file, buf.get(), n, off);
  if (got < 0) {
    fuse_reply_err(req, errno);
    return;
  }
  fuse_reply_buf(req, buf.get(), static_cast<size_t>(got));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: nullfs MOUNTPOINT SIZE_BYTES [-f] [--file PATH]\n");
    return 2;
  }
  g_size = static_cast<off_t>(std::strtoull(argv[2], nullptr, 10));
  bool foreground = false;
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-f") {
      foreground = true;
    } else if (a == "--file" && i + 1 < argc) {
      g_file = open(argv[++i], O_RDONLY | O_CLOEXEC);
      if (g_file < 0) {
        std::perror(argv[i]);
        return 1;
      }
    } else {
      std::fprintf(stderr, "nullfs: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  struct fuse_lowlevel_ops ops {};
  ops.init = Init;
  ops.lookup = Lookup;
  ops.getattr = GetAttr;
  ops.open = Open;
  ops.read = Read;
  char arg0[] = "nullfs";
  char* fargv[] = {arg0, nullptr};
  struct fuse_args args = FUSE_ARGS_INIT(1, fargv);
  struct fuse_session* se = fuse_session_new(&args, &ops, sizeof ops, nullptr);
  if (!se) return 1;
  if (fuse_set_signal_handlers(se) != 0 || fuse_session_mount(se, argv[1]) != 0) return 1;
  fuse_daemonize(foreground ? 1 : 0);
  struct fuse_loop_config* cfg = fuse_loop_cfg_create();
  int rc = fuse_session_loop_mt(se, cfg);
  fuse_loop_cfg_destroy(cfg);
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  fuse_session_destroy(se);
  return rc == 0 ? 0 : 1;
}
