// Attributes between HDF5 and slabfs.
//
// slabfs attributes are a string, or one or more numbers of one dtype
// (at most kMaxAttributeBytes). From HDF5 they come as:
//   integer / float (1 to 8 bytes), any dataspace  -> numbers (flattened)
//   string, fixed or variable length, one element  -> string (fixed-length
//     strings lose their padding: NULs, or spaces for SPACEPAD)
//   string with a null dataspace                   -> "" (netCDF's empty text)
// and anything else (string arrays, compound, enum, references, vlen,
// 16-bit floats, empty numeric attributes, values over the limit) is
// reported as not representable, with the reason.
// To HDF5 they go as a fixed-length string (scalar dataspace; UTF-8 when
// not ASCII), which netCDF reads as a text (NC_CHAR) attribute, or as
// little-endian numbers: a scalar for one value, else a 1-D array.
#ifndef SLABFS_TOOLS_CONVERT_HDF5_ATTRS_H_
#define SLABFS_TOOLS_CONVERT_HDF5_ATTRS_H_

#include <hdf5.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "slabfs/status.h"
#include "slabfs/types.h"

namespace slabfs::tools::convert {

// One attribute of an HDF5 object as slabfs sees it.
struct Hdf5Attribute {
  std::string name;
  std::optional<Attribute> value;  // empty when slabfs cannot hold it
  std::string why_not;             // then: what it is ("array of 3 strings")
};

// The names of the attributes of `obj`, in name order.
Result<std::vector<std::string>> Hdf5AttributeNames(hid_t obj, std::string_view path);

// Reads attribute `name` of `obj` (`path` names obj in errors). libhdf5
// failures are Corruption.
Result<Hdf5Attribute> ReadHdf5Attribute(hid_t obj, std::string_view path, const std::string& name);

// The value of a string attribute, if `obj` has one by that name that is a
// single string; nullopt otherwise (including on any error).
std::optional<std::string> ReadHdf5StringAttribute(hid_t obj, const char* name);

// Creates attribute `name` on `obj` (an existing one is replaced). With
// `file_type`, numbers are stored as that dtype (libhdf5 converts the
// values; netCDF wants _FillValue in the variable's type).
Status WriteHdf5Attribute(hid_t obj, std::string_view path, const std::string& name, const Attribute& value,
                          std::optional<DType> file_type = std::nullopt);

}  // namespace slabfs::tools::convert

#endif  // SLABFS_TOOLS_CONVERT_HDF5_ATTRS_H_
