// The HDF5 store linked in: the Python module, the tests, the benchmarks.
#include "stores/hdf5/hdf5_store_module.h"

namespace slabfs::stores {

Result<const Hdf5StoreModule*> Hdf5StoreEntry() {
  return static_cast<const Hdf5StoreModule*>(slabfs_hdf5_store_module());
}

}  // namespace slabfs::stores
