// Opens a foreign store (HDF5 / netCDF-4, Zarr) by format, for front ends
// that must not link every format's library themselves: this library links
// the stores that were built (the HDF5 store needs libhdf5; see
// CMakeLists.txt) and answers NotSupported, naming what is missing, for the
// others. A slab container is opened by the engine (Container::Open, or
// OpenContainerStore for reading).
#ifndef SLABFS_STORES_OPEN_STORE_H_
#define SLABFS_STORES_OPEN_STORE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "slabfs/store.h"
#include "stores/store_format.h"

namespace slabfs::stores {

struct ForeignStoreOptions {
  uint64_t cache_bytes = 64ull << 20;  // the store's chunk cache, a hard bound
  // Open for changes where the format allows them (a Zarr store:
  // Store::writer()); a format that does not (HDF5) opens read-only, and
  // its writer() is null.
  bool writable = false;
};

// Whether this build reads `format` (slab always; hdf5 when libhdf5 was
// found at build time; zarr when the Zarr store was built, with the slab
// tool's libraries).
bool StoreFormatBuilt(StoreFormat format);

// Opens `path` as a foreign store of `format`, read-only unless
// options.writable asks for changes and the format makes them. InvalidArgument
// for kSlab (the engine opens containers); NotSupported for a format this
// build does not read; the store's own errors otherwise.
Result<std::unique_ptr<Store>> OpenForeignStore(const std::string& path, StoreFormat format,
                                                const ForeignStoreOptions& options = {});

}  // namespace slabfs::stores

#endif  // SLABFS_STORES_OPEN_STORE_H_
