// Which kind of store a path holds, by its own signature: the front ends
// (the mount, `slab`, the Python binding) open any store by its path and
// let -o format= / --format force one.
//
//   slab   a slab container: the superblock magic "\x89SLABFS\n" at 0 or
//          4096 (its two superblock slots; a young one may have only the second)
//   hdf5   an HDF5 file (netCDF-4 is HDF5): "\x89HDF\r\n\x1a\n" at 0, 512,
//          1024, 2048, ... (a user block before it is a power of two of at
//          least 512 bytes, as the HDF5 format specification allows)
//   zarr   a directory holding .zgroup or .zarray (Zarr v2) or zarr.json (v3)
//   netcdf3  a classic netCDF file ("CDF\x01", "\x02" or "\x05" at 0):
//          recognised so that it is named, never opened
//
// Nothing here links a format's library: detection reads a few bytes.
#ifndef SLABFS_STORES_STORE_FORMAT_H_
#define SLABFS_STORES_STORE_FORMAT_H_

#include <string>
#include <string_view>

#include "slabfs/status.h"

namespace slabfs::stores {

enum class StoreFormat : unsigned char { kSlab, kHdf5, kZarr, kNetcdf3 };

std::string_view StoreFormatName(StoreFormat f);  // "slab", "hdf5", "zarr", "netcdf3"

// "slab", "hdf5" (also "netcdf", "nc", "h5": netCDF-4 is HDF5) or "zarr";
// InvalidArgument naming the choices otherwise.
Result<StoreFormat> ParseStoreFormat(std::string_view name);

// The format of what `path` holds. NotFound (no such path), NotSupported
// (a file or directory that is none of the three, said so with what was
// found), IOError.
Result<StoreFormat> DetectStoreFormat(const std::string& path);

}  // namespace slabfs::stores

#endif  // SLABFS_STORES_STORE_FORMAT_H_
