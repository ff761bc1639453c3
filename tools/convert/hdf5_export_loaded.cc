// The HDF5 export loaded from slabfs-hdf5-export.so on first use: `slab`.
#include "tools/convert/hdf5_export_module.h"

namespace slabfs::tools::convert {

Result<const Hdf5ExportModule*> Hdf5ExportEntry() {
  SLABFS_ASSIGN_OR_RETURN(const stores::FormatModuleHeader* header,
                          stores::LoadFormatModule("hdf5-export", "slabfs_hdf5_export_module"));
  return reinterpret_cast<const Hdf5ExportModule*>(header);
}

}  // namespace slabfs::tools::convert
