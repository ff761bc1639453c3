// The HDF5 store as a format module (stores/modules/format_module.h):
// slabfs-hdf5.so, which `slab` and `slabfs` load the first time they open an
// HDF5 or netCDF-4 file (hdf5_store_loaded.cc), and which the Python module,
// the tests and the benchmarks link in (hdf5_store_linked.cc).
#ifndef SLABFS_STORES_HDF5_HDF5_STORE_MODULE_H_
#define SLABFS_STORES_HDF5_HDF5_STORE_MODULE_H_

#include <memory>
#include <string>

#include "slabfs/store.h"
#include "stores/hdf5/hdf5_store.h"
#include "stores/modules/format_module.h"

namespace slabfs::stores {

struct Hdf5StoreModule {
  FormatModuleHeader header;
  Result<std::unique_ptr<Store>> (*open)(const std::string& path, const Hdf5StoreOptions& options);
};

// The module's table, loaded or linked as the program was built; the
// loader's refusal (NotSupported, naming the file) when it cannot be loaded.
Result<const Hdf5StoreModule*> Hdf5StoreEntry();

}  // namespace slabfs::stores

// The module's entry function (hdf5_store_module.cc).
extern "C" const void* slabfs_hdf5_store_module();

#endif  // SLABFS_STORES_HDF5_HDF5_STORE_MODULE_H_
