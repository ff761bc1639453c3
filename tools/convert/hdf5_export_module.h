// The HDF5 export (hdf5_sink.cc) as a format module
// (stores/modules/format_module.h): slabfs-hdf5-export.so, which `slab`
// loads when an export writes HDF5 (hdf5_export_loaded.cc) and the tests
// link in (hdf5_export_linked.cc). A module of its own, not part of
// slabfs-hdf5.so: it takes the import and export's code (CopySink,
// CopyReport) from `slab`, which the daemon does not have.
#ifndef SLABFS_TOOLS_CONVERT_HDF5_EXPORT_MODULE_H_
#define SLABFS_TOOLS_CONVERT_HDF5_EXPORT_MODULE_H_

#include <memory>
#include <string>

#include "stores/modules/format_module.h"
#include "tools/convert/store_copy.h"

namespace slabfs::tools::convert {

struct Hdf5ExportModule {
  stores::FormatModuleHeader header;
  std::unique_ptr<CopySink> (*sink)(const std::string& target, CopyReport& report);
};

// The module's table, loaded or linked as the program was built; the
// loader's refusal (NotSupported, naming the file) when it cannot be loaded.
Result<const Hdf5ExportModule*> Hdf5ExportEntry();

}  // namespace slabfs::tools::convert

// The module's entry function (hdf5_export_module.cc).
extern "C" const void* slabfs_hdf5_export_module();

#endif  // SLABFS_TOOLS_CONVERT_HDF5_EXPORT_MODULE_H_
