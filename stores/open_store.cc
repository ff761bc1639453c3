#include "stores/open_store.h"

#include <fmt/format.h>

#if SLABFS_HAVE_HDF5_STORE
#include "stores/hdf5/hdf5_store_module.h"
#endif
#if SLABFS_HAVE_ZARR_STORE
#include "stores/zarr/zarr_store.h"
#endif

namespace slabfs::stores {

bool StoreFormatBuilt(StoreFormat format) {
  switch (format) {
    case StoreFormat::kSlab: return true;
    case StoreFormat::kHdf5: return SLABFS_HAVE_HDF5_STORE != 0;
    case StoreFormat::kZarr: return SLABFS_HAVE_ZARR_STORE != 0;
    case StoreFormat::kNetcdf3: return false;
  }
  return false;
}

Result<std::unique_ptr<Store>> OpenForeignStore(const std::string& path, StoreFormat format,
                                                const ForeignStoreOptions& options) {
  (void)options;  // unused in a build without foreign stores
  switch (format) {
    case StoreFormat::kSlab:
      return Err(Status::InvalidArgument(fmt::format("{}: a slab container is opened by the engine", path)));
    case StoreFormat::kHdf5: {
#if SLABFS_HAVE_HDF5_STORE
      Hdf5StoreOptions o;
      o.cache_bytes = options.cache_bytes;
      // slab and slabfs load the HDF5 store now, the first time a file needs it.
      auto entry = Hdf5StoreEntry();
      if (!entry) {
        return Err(
            Status::NotSupported(fmt::format("{} is an HDF5 or netCDF-4 file, and {}", path, entry.error().message())));
      }
      return (*entry)->open(path, o);
#else
      return Err(Status::NotSupported(
          fmt::format("{} is an HDF5 or netCDF-4 file, and this slabfs was built without libhdf5 (libhdf5-dev): "
                      "rebuild with it, or `slab import` the file on a machine that has it",
                      path)));
#endif
    }
    case StoreFormat::kZarr: {
#if SLABFS_HAVE_ZARR_STORE
      ZarrStoreOptions o;
      o.cache_bytes = options.cache_bytes;
      o.writable = options.writable;
      return OpenZarrStore(path, o);
#else
      return Err(Status::NotSupported(
          fmt::format("{} is a Zarr store, and this slabfs was built without the Zarr store (it needs the slab "
                      "tool's libraries: blosc, nlohmann-json): rebuild with them, or `slab import` the store on a "
                      "machine that has them",
                      path)));
#endif
    }
    case StoreFormat::kNetcdf3:
      return Err(Status::NotSupported(
          fmt::format("{} is a classic netCDF file (netCDF-3), which slabfs does not read: convert it to netCDF-4 "
                      "with `nccopy -k nc4 {} out.nc`",
                      path, path)));
  }
  return Err(Status::InvalidArgument("unknown store format"));
}

}  // namespace slabfs::stores
