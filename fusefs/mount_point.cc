#include "fusefs/mount_point.h"

#include <dirent.h>

#include <cerrno>
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

namespace slabfs::fusefs {
namespace {

// The kernel writes space, tab, newline and backslash in mountinfo paths
// as \ooo (octal).
std::string Unescape(std::string_view field) {
  auto octal = [](char c) { return c >= '0' && c <= '7'; };
  std::string out;
  out.reserve(field.size());
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() && octal(field[i + 1]) && octal(field[i + 2]) &&
        octal(field[i + 3])) {
      out.push_back(static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 +
                                      (field[i + 3] - '0')));
      i += 3;
      continue;
    }
    out.push_back(field[i]);
  }
  return out;
}

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

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

std::vector<MountEntry> ParseMountInfo(std::string_view text) {
  std::vector<MountEntry> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::vector<std::string_view> f = Fields(text.substr(start, end - start));
    start = end + 1;
    // id parent major:minor root mount-point options [optional...] - fstype source super-options
    size_t dash = 6;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (dash + 2 >= f.size()) continue;  // no "- fstype source"
    MountEntry e;
    e.mount_point = Unescape(f[4]);
    e.fstype = Unescape(f[dash + 1]);
    e.source = Unescape(f[dash + 2]);
    out.push_back(std::move(e));
  }
  return out;
}

const MountEntry* TopMountAt(const std::vector<MountEntry>& mounts, std::string_view path) {
  for (auto it = mounts.rbegin(); it != mounts.rend(); ++it) {
    if (it->mount_point == path) return &*it;
  }
  return nullptr;
}

Status CheckMountPoint(const std::string& mountpoint, bool allow_nonempty,
                       const std::vector<MountEntry>& mounts) {
  if (const MountEntry* top = TopMountAt(mounts, mountpoint)) {
    // systemd's automount: the autofs trigger is in place and the kernel
    // is waiting for this very mount. Listing the directory would wait for
    // it too.
    if (top->fstype == "autofs") return Status::OK();
    return Status::Busy(fmt::format(
        "{} is already a mount point ({} {}); unmount it first (fusermount3 -u {}) or use another "
        "directory",
        mountpoint, top->fstype, top->source, mountpoint));
  }
  if (allow_nonempty) return Status::OK();
  bool more = false;
  std::string first = FirstEntry(mountpoint, &more);
  if (first.empty()) return Status::OK();
  return Status::NotEmpty(fmt::format(
      "{} is not empty (it holds '{}'{}), and a mount would hide what it holds; use an empty "
      "directory, or -o nonempty to mount over it anyway",
      mountpoint, first, more ? " and more" : ""));
}

Status CheckMountPoint(const std::string& mountpoint, bool allow_nonempty) {
  std::ifstream in("/proc/self/mountinfo");
  std::vector<MountEntry> mounts;
  if (in) {
    std::ostringstream text;
    text << in.rdbuf();
    mounts = ParseMountInfo(text.str());
  }
  return CheckMountPoint(mountpoint, allow_nonempty, mounts);
}

}  // namespace slabfs::fusefs
