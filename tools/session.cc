#include "tools/session.h"

#include <utility>

#include <fmt/format.h>

#include "stores/open_store.h"
#include "stores/store_format.h"
#include "tools/commands.h"

namespace slabfs::tools {

bool IsForeignStore(const std::string& path) {
  auto format = stores::DetectStoreFormat(path);
  return format && (*format == stores::StoreFormat::kHdf5 || *format == stores::StoreFormat::kZarr);
}

Status ForeignFileStatus(const std::string& path, bool changes) {
  auto format = stores::DetectStoreFormat(path);
  if (!format || (*format != stores::StoreFormat::kHdf5 && *format != stores::StoreFormat::kZarr)) {
    return Status::OK();
  }
  const std::string what = *format == stores::StoreFormat::kHdf5 ? "an HDF5 file" : "a Zarr store";
  if (changes) {
    return Status::NotSupported(
        fmt::format("{} is {}: slab changes only slab containers; use `slab import` to copy it into one", path, what));
  }
  return Status::NotSupported(
      fmt::format("{} is {}: this command works on slab containers only (ls, info, chunks, attr, defined, "
                  "fsck and the export of one dataset read it in place); use `slab import` to copy it into one",
                  path, what));
}

Result<std::unique_ptr<Store>> OpenStoreForReading(const std::string& path) {
  // A foreign store this build reads opens; the others (Zarr, netCDF-3)
  // say what they are. Anything else, a container whose first superblock
  // slot is still empty included, is the container's to judge.
  auto format = stores::DetectStoreFormat(path);
  if (format && *format != stores::StoreFormat::kSlab) return stores::OpenForeignStore(path, *format);
  return OpenContainerStore(path);
}

Result<std::unique_ptr<Container>> OpenForReading(const std::string& path) {
  SLABFS_RETURN_IF_ERROR_R(ForeignFileStatus(path, /*changes=*/false));
  OpenOptions options;
  options.read_only = true;
  return Container::Open(path, options);
}

Result<WriteSession> WriteSession::Open(const std::string& path, std::string_view command, bool create, bool pack) {
  SLABFS_RETURN_IF_ERROR_R(ForeignFileStatus(path, /*changes=*/true));
  OpenOptions options;
  options.create = create;
  options.pack = pack;
  // A file written once by a copy (repack, import into a new container):
  // a cache of one transfer block, so that encoding and writing back keep
  // pace with the copy (its progress bar and Ctrl-C see the real work, not
  // one long final commit) and memory stays bounded.
  if (pack) options.cache_bytes = kTransferBlockBytes;
  options.holder = fmt::format("slab {}", command);
  SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<Container> c, Container::Open(path, options));
  return WriteSession(std::move(c));
}

WriteSession::~WriteSession() {
  if (container_) container_->Discard();
}

Status WriteSession::Finish() {
  Status s = container_->Close();
  container_.reset();
  return s;
}

}  // namespace slabfs::tools
