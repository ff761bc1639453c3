// The HDF5 export loaded from slabfs-hdf5-export.so on first use: `slab`.
#include "tools/convert/hdf5_export_module.h"

namespace slabfs::tools::convert {

Result<const Hdf5ExportModule*> Hdf5ExportEntry() {
  return stores::LoadFormatModuleTable<Hdf5ExportModule>("hdf5-export", "slabfs_hdf5_export_module");
}

}  // namespace slabfs::tools::convert
