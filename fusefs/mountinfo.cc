#include "fusefs/mountinfo.h"

#include <fstream>
#include <sstream>

namespace slabfs::fusefs {
namespace {

// The kernel writes space, tab, newline and backslash in mountinfo fields
// as \ooo (octal).
std::string Unescape(std::string_view field) {
  auto octal = [](char c) { return c >= '0' && c <= '7'; };
  std::string out;
  out.reserve(field.size());
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() && octal(field[i + 1]) && octal(field[i + 2]) && octal(field[i + 3])) {
      out.push_back(static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 + (field[i + 3] - '0')));
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

}  // namespace

std::vector<MountEntry> ParseMountInfo(std::string_view text) {
  std::vector<MountEntry> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::vector<std::string_view> f = Fields(text.substr(start, end - start));
    start = end + 1;
    size_t dash = 6;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (dash + 2 >= f.size()) continue;  // no "- fstype source"
    MountEntry e;
    e.device = std::string(f[2]);
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

std::vector<MountEntry> ReadMountInfo() {
  std::ifstream in("/proc/self/mountinfo");
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return ParseMountInfo(text.str());
}

}  // namespace slabfs::fusefs
