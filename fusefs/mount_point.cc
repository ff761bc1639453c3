#include "fusefs/mount_point.h"

#include <dirent.h>

#include <cerrno>
#include <memory>

#include <fmt/format.h>

namespace slabfs::fusefs {
namespace {

// The first entry of the directory other than . and .., or "" if there is
// none or it cannot be listed.
std::string FirstEntry(const std::string& dir, bool* more) {
  *more = false;
  struct Closer {
    void operator()(DIR* d) const { closedir(d); }
  };
  std::unique_ptr<DIR, Closer> d(opendir(dir.c_str()));
  if (d == nullptr) return "";
  std::string first;
  while (dirent* e = readdir(d.get())) {
    std::string_view name(e->d_name);
    if (name == "." || name == "..") continue;
    if (first.empty()) {
      first = std::string(name);
      continue;
    }
    *more = true;
    break;
  }
  return first;
}

}  // namespace

Status CheckMountPoint(const std::string& mountpoint, bool allow_nonempty, const std::vector<MountEntry>& mounts) {
  if (const MountEntry* top = TopMountAt(mounts, mountpoint)) {
    // systemd's automount: the autofs trigger is in place and the kernel
    // is waiting for this very mount. Listing the directory would wait for
    // it too.
    if (top->fstype == "autofs") return Status::OK();
    return Status::Busy(
        fmt::format("{} is already a mount point ({} {}); unmount it first (fusermount3 -u {}) or use another "
                    "directory",
                    mountpoint, top->fstype, top->source, mountpoint));
  }
  if (allow_nonempty) return Status::OK();
  bool more = false;
  std::string first = FirstEntry(mountpoint, &more);
  if (first.empty()) return Status::OK();
  return Status::NotEmpty(
      fmt::format("{} is not empty (it holds '{}'{}), and a mount would hide what it holds; use an empty "
                  "directory, or -o nonempty to mount over it anyway",
                  mountpoint, first, more ? " and more" : ""));
}

Status CheckMountPoint(const std::string& mountpoint, bool allow_nonempty) {
  return CheckMountPoint(mountpoint, allow_nonempty, ReadMountInfo());
}

}  // namespace slabfs::fusefs
