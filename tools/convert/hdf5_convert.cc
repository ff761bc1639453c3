// HDF5 / netCDF-4 import and export: being written (issue 13).
#include "tools/convert/convert.h"

namespace slabfs::tools::convert {

Status ImportHdf5(const TreeImportOptions&, Container&, Progress&, std::ostream&) {
  return Status::NotSupported("HDF5 import is not built yet");
}
Status ExportHdf5(const TreeExportOptions&, const Container&, const std::string&, Progress&,
                  std::ostream&) {
  return Status::NotSupported("HDF5 export is not built yet");
}

}  // namespace slabfs::tools::convert
