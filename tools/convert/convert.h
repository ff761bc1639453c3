// Whole trees between a container and other formats: HDF5 / netCDF-4
// (through libhdf5) and Zarr v2 / v3 directory stores.
//
//   slab import FILE.slab SOURCE [--path P] [--into G] [--strict] [--quiet]
//   slab export FILE.slab OUTPUT [--path P] [--format hdf5|zarr2|zarr3] [--quiet]
//
// Both are copies between two stores (store_copy.h): SOURCE, or FILE for
// an export (a container, or an HDF5 / netCDF-4 file or Zarr store, which
// then converts between those formats), is read through its Store; the
// destination is a sink. The commands (tree_transfer.cc) find the formats,
// open or create the destination, show progress, and make the result
// all-or-nothing:
//  - import into a container that does not exist yet builds it under a
//    temporary name and links it into place after its one commit; into an
//    existing container it is one WriteSession (a failure commits nothing);
//  - export writes OUTPUT under a temporary name next to it and renames it
//    into place at the end; OUTPUT must not exist.
#ifndef SLABFS_TOOLS_CONVERT_CONVERT_H_
#define SLABFS_TOOLS_CONVERT_CONVERT_H_

#include <ostream>
#include <string>

#include "slabfs/container.h"
#include "slabfs/status.h"
#include "tools/convert/progress.h"

namespace slabfs::tools::convert {

enum class Format { kHdf5, kZarr2, kZarr3 };

struct TreeImportOptions {
  std::string container;   // the .slab file; created when it does not exist
  std::string source;      // an HDF5/netCDF-4 file or a Zarr store directory
  std::string from = "/";  // --path: the group or dataset of the source to copy
  std::string into = "/";  // --into: the container group that receives it
  bool strict = false;     // refuse, instead of skipping, what slabfs cannot hold
  // Decode and encode every chunk, even where the source's chunks are
  // encoded as the container's are (HDF5 shuffle/deflate: by default those
  // are copied as stored, after a decode that checks them).
  bool recompress = false;
  bool quiet = false;
};

struct TreeExportOptions {
  std::string container;        // the source: a container, or an HDF5 file or Zarr store
  std::string output;           // an .h5/.nc file or a Zarr store directory
  std::string from = "/";       // --path: the group or dataset to write
  std::string format = "auto";  // auto (by extension), hdf5, zarr2, zarr3
  bool quiet = false;
};

// The kind of an import source: HDF5 by its signature, Zarr by .zgroup /
// .zarray (v2) or zarr.json (v3) in a directory.
Result<Format> DetectSource(const std::string& source);
// The export format from --format, or from OUTPUT's extension with auto
// (.h5 .hdf5 .he5 .nc .nc4 -> hdf5, .zarr -> zarr2).
Result<Format> ExportFormat(const TreeExportOptions& o);

// The commands themselves.
Status RunImportTree(const TreeImportOptions& o, std::ostream& out);
Status RunExportTree(const TreeExportOptions& o, std::ostream& out);

}  // namespace slabfs::tools::convert

#endif  // SLABFS_TOOLS_CONVERT_CONVERT_H_
