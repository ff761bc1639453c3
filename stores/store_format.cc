#include "stores/store_format.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "engine/format/layout.h"
#include "engine/format/superblock.h"
#include "engine/io/os_error.h"

namespace slabfs::stores {
namespace {

constexpr std::string_view kHdf5Magic("\x89HDF\r\n\x1a\n", 8);

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// The 8 bytes at `offset`, or fewer at the end of the file.
Result<std::string> ReadAt(int fd, const std::string& path, uint64_t offset) {
  std::string out(8, '\0');
  ssize_t n = engine::RetryOnEintr([&] { return ::pread(fd, out.data(), out.size(), static_cast<off_t>(offset)); });
  if (n < 0) return Err(engine::StatusFromErrno(errno, "read " + path));
  out.resize(static_cast<size_t>(n));
  return out;
}

}  // namespace

std::string_view StoreFormatName(StoreFormat f) {
  switch (f) {
    case StoreFormat::kSlab: return "slab";
    case StoreFormat::kHdf5: return "hdf5";
    case StoreFormat::kZarr: return "zarr";
    case StoreFormat::kNetcdf3: return "netcdf3";
  }
  return "unknown";
}

Result<StoreFormat> ParseStoreFormat(std::string_view name) {
  if (name == "slab") return StoreFormat::kSlab;
  if (name == "hdf5" || name == "h5" || name == "netcdf" || name == "nc") return StoreFormat::kHdf5;
  if (name == "zarr") return StoreFormat::kZarr;
  return Err(Status::InvalidArgument(fmt::format("unknown format '{}': expected slab, hdf5, netcdf or zarr", name)));
}

Result<StoreFormat> DetectStoreFormat(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Err(engine::StatusFromErrno(errno, path));
  if (S_ISDIR(st.st_mode)) {
    for (const char* meta : {"/.zgroup", "/.zarray", "/zarr.json"}) {
      if (Exists(path + meta)) return StoreFormat::kZarr;
    }
    return Err(Status::NotSupported(
        fmt::format("{} is a directory without .zgroup, .zarray or zarr.json: not a Zarr store", path)));
  }
  if (!S_ISREG(st.st_mode)) return Err(Status::NotSupported(fmt::format("{} is not a regular file", path)));
  int fd = engine::RetryOnEintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); });
  if (fd < 0) return Err(engine::StatusFromErrno(errno, path));
  struct Closer {
    ~Closer() { ::close(fd); }
    int fd;
  } closer{fd};
  SLABFS_ASSIGN_OR_RETURN(std::string head, ReadAt(fd, path, 0));
  if (engine::HasSuperblockMagic(head)) return StoreFormat::kSlab;
  // A container has two superblock slots; a young one may have written
  // only the second (engine/format/layout.h).
  SLABFS_ASSIGN_OR_RETURN(std::string slot1, ReadAt(fd, path, engine::kSuperblockSlot1));
  if (engine::HasSuperblockMagic(slot1)) return StoreFormat::kSlab;
  if (head == kHdf5Magic) return StoreFormat::kHdf5;
  // An HDF5 superblock after a user block: at 512, 1024, 2048, ...
  for (uint64_t at = 512; at + 8 <= static_cast<uint64_t>(st.st_size); at *= 2) {
    SLABFS_ASSIGN_OR_RETURN(std::string bytes, ReadAt(fd, path, at));
    if (bytes == kHdf5Magic) return StoreFormat::kHdf5;
  }
  if (head.starts_with("CDF\x01") || head.starts_with("CDF\x02") || head.starts_with("CDF\x05")) {
    return StoreFormat::kNetcdf3;
  }
  return Err(
      Status::NotSupported(fmt::format("{} is neither a slab container, an HDF5 or netCDF-4 file, nor a Zarr store "
                                       "(no signature found)",
                                       path)));
}

}  // namespace slabfs::stores
