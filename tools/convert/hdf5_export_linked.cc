// The HDF5 export linked in: the tests.
#include "tools/convert/hdf5_export_module.h"

namespace slabfs::tools::convert {

Result<const Hdf5ExportModule*> Hdf5ExportEntry() {
  return static_cast<const Hdf5ExportModule*>(slabfs_hdf5_export_module());
}

}  // namespace slabfs::tools::convert
