#include "fusefs/readahead.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "fusefs/mountinfo.h"

namespace slabfs::fusefs {

std::optional<std::string> FuseMountDevice(std::string_view mountinfo, std::string_view mountpoint) {
  // The last matching line wins, as for stacked mounts.
  std::optional<std::string> found;
  for (const MountEntry& e : ParseMountInfo(mountinfo)) {
    if (e.mount_point != mountpoint) continue;
    if (e.fstype == "fuse" || e.fstype.starts_with("fuse.")) found = e.device;
  }
  return found;
}

std::string SetMountReadahead(std::string_view mountpoint, uint64_t bytes) {
  std::ifstream in("/proc/self/mountinfo");
  if (!in) return fmt::format("cannot read /proc/self/mountinfo: {}", std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  auto dev = FuseMountDevice(text.str(), mountpoint);
  if (!dev) return fmt::format("no FUSE mount at {} in /proc/self/mountinfo", mountpoint);
  const std::string path = fmt::format("/sys/class/bdi/{}/read_ahead_kb", *dev);
  std::ofstream out(path);
  if (!out) return fmt::format("cannot open {}: {}", path, std::strerror(errno));
  out << (bytes >> 10) << '\n';
  out.flush();
  if (!out) return fmt::format("cannot write {}: {}", path, std::strerror(errno));
  return "";
}

}  // namespace slabfs::fusefs
