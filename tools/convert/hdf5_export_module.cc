// The entry of slabfs-hdf5-export.so (and of the linked-in HDF5 export).
#include "tools/convert/hdf5_export_module.h"

#include "stores/modules/build_id.h"

extern "C" __attribute__((visibility("default"))) const void* slabfs_hdf5_export_module() {
  static const slabfs::tools::convert::Hdf5ExportModule kModule{{SLABFS_BUILD_ID}, &slabfs::tools::convert::Hdf5Sink};
  return &kModule;
}
