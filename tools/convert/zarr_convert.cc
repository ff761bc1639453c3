// Zarr v2 / v3 import and export: being written (issue 13).
#include "tools/convert/convert.h"

namespace slabfs::tools::convert {

Status ImportZarr(const TreeImportOptions&, Container&, Progress&, std::ostream&) {
  return Status::NotSupported("Zarr import is not built yet");
}
Status ExportZarr(const TreeExportOptions&, Format, const Container&, const std::string&,
                  Progress&, std::ostream&) {
  return Status::NotSupported("Zarr export is not built yet");
}

}  // namespace slabfs::tools::convert
