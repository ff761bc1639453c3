// Object paths as every store and converter spells them: absolute, '/'
// separated, the root "/". One definition for the HDF5 and Zarr stores and
// the import and export, which all build child paths from a parent's.
#ifndef SLABFS_STORES_OBJECT_PATH_H_
#define SLABFS_STORES_OBJECT_PATH_H_

#include <string>
#include <string_view>

namespace slabfs::stores {

// "/a/b" + "c" -> "/a/b/c"; "/" (or "") + "c" -> "/c".
inline std::string JoinPath(std::string_view parent, std::string_view name) {
  std::string out;
  const bool root = parent.empty() || parent == "/";
  out.reserve((root ? 0 : parent.size()) + 1 + name.size());
  if (!root) out.append(parent);
  out.push_back('/');
  out.append(name);
  return out;
}

// The last component of a path ("/a/b" -> "b", "/a/b/" -> "b", "/" -> "/",
// "name" -> "name").
inline std::string BaseName(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos || path.size() == 1) return std::string(path);
  return std::string(path.substr(slash + 1));
}

}  // namespace slabfs::stores

#endif  // SLABFS_STORES_OBJECT_PATH_H_
