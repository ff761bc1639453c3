// Whole trees between a container and other formats: HDF5 / netCDF-4
// (through libhdf5) and Zarr v2 / v3 directory stores.
//
//   slab import FILE.slab SOURCE [--path P] [--into G] [--strict] [--quiet]
//   slab export FILE.slab OUTPUT [--path P] [--format hdf5|zarr2|zarr3] [--quiet]
//
// The driver (tree_transfer.cc) finds the kind of SOURCE, opens or creates
// the container, shows progress, and makes the result all-or-nothing:
//  - import into a container that does not exist yet builds it under a
//    temporary name and links it into place after its one commit; into an
//    existing container it is one WriteSession (a failure commits nothing);
//  - export writes OUTPUT under a temporary name next to it and renames it
//    into place at the end; OUTPUT must not exist.
// The format modules (hdf5_*.cc, zarr_*.cc) only walk and copy.
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
  std::string container;
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

// Copies o.from of the source into group o.into of `dest` (which the driver
// commits). Lines for skipped objects go to `out`.
Status ImportHdf5(const TreeImportOptions& o, Container& dest, Progress& progress, std::ostream& out);
Status ImportZarr(const TreeImportOptions& o, Container& dest, Progress& progress, std::ostream& out);

// Writes o.from of `src` to the file or directory `target` (a temporary
// name that the driver renames to o.output).
Status ExportHdf5(const TreeExportOptions& o, const Container& src, const std::string& target, Progress& progress,
                  std::ostream& out);
Status ExportZarr(const TreeExportOptions& o, Format format, const Container& src, const std::string& target,
                  Progress& progress, std::ostream& out);

// The commands themselves.
Status RunImportTree(const TreeImportOptions& o, std::ostream& out);
Status RunExportTree(const TreeExportOptions& o, std::ostream& out);

}  // namespace slabfs::tools::convert

#endif  // SLABFS_TOOLS_CONVERT_CONVERT_H_
