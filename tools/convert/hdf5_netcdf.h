// netCDF-4's conventions on top of HDF5, as the import and export need them.
//
// netCDF-4 keeps a dimension as an HDF5 dimension scale: a 1-D dataset
// (the coordinate variable, named like the dimension; or, for a dimension
// without a variable, a placeholder whose NAME attribute starts with
// kNetcdfDimOnly) that the variables using it reference from their
// DIMENSION_LIST attribute. slabfs records a dataset's dimension names as
// the string attribute _ARRAY_DIMENSIONS holding a JSON list
// (["time","lat","lon"]), the convention Zarr and xarray use.
#ifndef SLABFS_TOOLS_CONVERT_HDF5_NETCDF_H_
#define SLABFS_TOOLS_CONVERT_HDF5_NETCDF_H_

#include <hdf5.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "slabfs/status.h"
#include "slabfs/types.h"

namespace slabfs::tools::convert {

inline constexpr std::string_view kArrayDimensions = "_ARRAY_DIMENSIONS";
// The NAME of a netCDF dimension that has no variable starts with this.
inline constexpr std::string_view kNetcdfDimOnly = "This is a netCDF dimension but not a netCDF variable.";

// Whether attribute `name` is bookkeeping of netCDF or of the dimension
// scale API, which an import does not copy: DIMENSION_LIST,
// REFERENCE_LIST, _Netcdf4Dimid, _Netcdf4Coordinates, _nc3_strict,
// _NCProperties, and CLASS and NAME on a dimension scale.
bool IsDimensionBookkeeping(std::string_view name, bool is_scale);

// ["a","b"] as JSON text, and back (nullopt for anything but a JSON list
// of strings).
std::string DimensionsJson(const std::vector<std::string>& names);
std::optional<std::vector<std::string>> ParseDimensionsJson(std::string_view text);

// Finds the dimension names of the datasets of one HDF5 file.
class DimensionNamer {
 public:
  explicit DimensionNamer(hid_t file) : file_(file) {}

  // Whether the dataset is a dimension scale, and whether it is netCDF's
  // placeholder for a dimension without a variable (not data).
  bool IsScale(hid_t dset) const;
  bool IsPlaceholder(hid_t dset) const;

  // The dimension names of `dset` (at `path`, of rank `rank`): for a
  // 1-D dimension scale its own name; for a netCDF multi-dimensional
  // coordinate variable, the names its _Netcdf4Coordinates give; else the
  // names of the first scale attached to each dimension. nullopt when a
  // dimension has none.
  Result<std::optional<std::vector<std::string>>> Names(hid_t dset, std::string_view path, int rank);

 private:
  Status LoadDimids();

  hid_t file_;
  bool dimids_loaded_ = false;
  std::map<int64_t, std::string> dimids_;  // _Netcdf4Dimid -> dimension name
};

// The dimension name a scale dataset's link name stands for (netCDF names
// a placeholder that clashes with a variable "_nc4_non_coord_NAME").
std::string DimensionNameOfScale(std::string_view link_name);
inline constexpr std::string_view kNetcdfNonCoordPrefix = "_nc4_non_coord_";
// The netCDF variable name of a link: netCDF-4 stores a variable that has
// a dimension's name but does not span it as "_nc4_non_coord_NAME".
std::string NetcdfVariableName(std::string_view link_name);

// Which datasets of an export become dimension scales and which
// dimensions they are attached to.
struct DimensionUser {
  std::string path;                              // in the output file
  std::string group;                             // the path of its group
  Dims shape, max_shape;                         // empty for a scalar
  std::optional<std::vector<std::string>> dims;  // from _ARRAY_DIMENSIONS
};
// A netCDF dimension without a variable, made for the export.
struct DimensionPlaceholder {
  std::string path;
  uint64_t length = 0;
  bool unlimited = false;
};
struct ScaleRef {
  enum class Kind { kNone, kDataset, kPlaceholder } kind = Kind::kNone;
  size_t index = 0;  // into the datasets or the placeholders
};
struct ScalePlan {
  std::vector<bool> is_scale;                 // per dataset
  std::vector<std::vector<ScaleRef>> attach;  // per dataset and dimension
  std::vector<bool> named;                    // its dimensions are all scales (or it is its own)
  std::vector<DimensionPlaceholder> placeholders;
};
// Dimension n of a dataset in group g is the 1-D dataset named n in g or
// in the nearest ancestor of g that has one, if that dataset's own names
// are absent or [n] and its length matches (equal, or both unlimited);
// failing a dataset of that name anywhere, or where an ancestor's has
// another length (g's own dimension shadows it), a placeholder in g, if every
// dataset of g that names n agrees on its length (or all of them have it
// unlimited; then the longest) and `groups` (the group paths of the file)
// has no group of that path. A dataset gets scales only when every
// dimension has one: netCDF cannot read a variable whose dimensions are
// half named. A 1-D dataset whose names are [its own name] is a scale.
ScalePlan PlanDimensionScales(const std::vector<DimensionUser>& datasets, const std::vector<std::string>& groups);

}  // namespace slabfs::tools::convert

#endif  // SLABFS_TOOLS_CONVERT_HDF5_NETCDF_H_
