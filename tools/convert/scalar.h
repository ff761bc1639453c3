// Rank-0 (scalar) arrays of HDF5, netCDF and Zarr in a container, whose
// datasets have rank 1 to 32. One set of rules for every format:
//  - an import makes a scalar a dataset of fixed shape (1), chunks (1), no
//    filters (one element gains nothing from them), with the attribute
//    kScalarAttribute (i8 1);
//  - an export writes a dataset of fixed shape (1) that carries that
//    attribute (whatever its value) as a scalar again (an HDF5 scalar
//    dataspace, a Zarr array of shape []), without the attribute.
// So HDF5 -> slab -> Zarr and Zarr -> slab -> HDF5 keep scalars scalar.
#ifndef SLABFS_TOOLS_CONVERT_SCALAR_H_
#define SLABFS_TOOLS_CONVERT_SCALAR_H_

#include <string>
#include <string_view>
#include <vector>

#include "slabfs/types.h"

namespace slabfs::tools::convert {

inline constexpr std::string_view kScalarAttribute = "_SLAB_SCALAR";

// Sets the geometry of the dataset that holds an imported scalar: shape,
// max shape and chunks (1), no filters. dtype and fill are the caller's.
void MakeScalarOptions(DatasetOptions* o);
// The marker attribute's value (i8 1).
Attribute ScalarMarker();

// Whether an export writes the dataset as a scalar: fixed shape (1) and
// kScalarAttribute among `attribute_names`.
bool IsExportedScalar(const DatasetInfo& info, const std::vector<std::string>& attribute_names);

}  // namespace slabfs::tools::convert

#endif  // SLABFS_TOOLS_CONVERT_SCALAR_H_
