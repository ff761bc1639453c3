#include "fusefs/readahead.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

namespace slabfs::fusefs {
namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(std::string_view field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      std::string_view oct = field.substr(i + 1, 3);
      if (oct.find_first_not_of("01234567") == std::string_view::npos) {
        out.push_back(static_cast<char>((oct[0] - '0') * 64 + (oct[1] - '0') * 8 + (oct[2] - '0')));
        i += 3;
        continue;
      }
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
    size_t j = line.find(' ', i);
    if (j == std::string_view::npos) j = line.size();
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace

std::optional<std::string> FuseMountDevice(std::string_view mountinfo,
                                           std::string_view mountpoint) {
  // "36 35 0:39 / /mnt/x rw,nosuid - fuse.slabfs /data/x.slab rw,..."
  std::optional<std::string> found;
  while (!mountinfo.empty()) {
    size_t nl = mountinfo.find('\n');
    std::string_view line = mountinfo.substr(0, nl);
    mountinfo.remove_prefix(nl == std::string_view::npos ? mountinfo.size() : nl + 1);
    std::vector<std::string_view> f = Fields(line);
    if (f.size() < 7 || Unescape(f[4]) != mountpoint) continue;
    size_t dash = 6;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (dash + 1 >= f.size()) continue;
    std::string_view type = f[dash + 1];
    if (type == "fuse" || type.starts_with("fuse.")) found = std::string(f[2]);
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
