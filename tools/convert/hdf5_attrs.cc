#include "tools/convert/hdf5_attrs.h"

#include <cstring>

#include <fmt/format.h>

#include "tools/convert/hdf5_util.h"

namespace slabfs::tools::convert {
namespace {

herr_t CollectName(hid_t, const char* name, const H5A_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}

std::string Where(std::string_view path, std::string_view name) {
  return fmt::format("{}: attribute '{}'", path, name);
}

// The text of a fixed-length string of `size` bytes padded as `pad` says.
std::string Unpad(const char* data, size_t size, H5T_str_t pad) {
  std::string s(data, size);
  if (pad == H5T_STR_NULLTERM) {
    size_t nul = s.find('\0');
    if (nul != std::string::npos) s.resize(nul);
  } else {
    const char padding = pad == H5T_STR_SPACEPAD ? ' ' : '\0';
    while (!s.empty() && s.back() == padding) s.pop_back();
  }
  return s;
}

Result<Hdf5Attribute> ReadString(hid_t attr, hid_t type, hid_t space, uint64_t points, std::string_view where,
                                 Hdf5Attribute a) {
  if (points == 0) {
    a.value = Attribute::String("");
    return a;
  }
  if (points > 1) {
    a.why_not = fmt::format("array of {} strings", points);
    return a;
  }
  htri_t vlen = H5Tis_variable_str(type);
  if (vlen < 0) return Err(Hdf5Error(Code::kCorruption, where));
  std::string text;
  if (vlen > 0) {
    SLABFS_ASSIGN_OR_RETURN(H5Handle mem, Checked(H5Tcopy(H5T_C_S1), Code::kCorruption, where));
    SLABFS_RETURN_IF_ERROR_R(Checked(H5Tset_size(mem.get(), H5T_VARIABLE), Code::kCorruption, where));
    SLABFS_RETURN_IF_ERROR_R(Checked(H5Tset_cset(mem.get(), H5Tget_cset(type)), Code::kCorruption, where));
    char* p = nullptr;
    SLABFS_RETURN_IF_ERROR_R(Checked(H5Aread(attr, mem.get(), &p), Code::kCorruption, where));
    if (p != nullptr) text = p;
    (void)H5Dvlen_reclaim(mem.get(), space, H5P_DEFAULT, &p);
  } else {
    const size_t size = H5Tget_size(type);
    if (size == 0) return Err(Hdf5Error(Code::kCorruption, where));
    if (size > kMaxAttributeBytes) {
      a.why_not = fmt::format("a string of {} bytes (more than {})", size, kMaxAttributeBytes);
      return a;
    }
    std::string buf(size, '\0');
    SLABFS_RETURN_IF_ERROR_R(Checked(H5Aread(attr, type, buf.data()), Code::kCorruption, where));
    text = Unpad(buf.data(), size, H5Tget_strpad(type));
  }
  if (text.size() > kMaxAttributeBytes) {
    a.why_not = fmt::format("a string of {} bytes (more than {})", text.size(), kMaxAttributeBytes);
    return a;
  }
  a.value = Attribute::String(std::move(text));
  return a;
}

}  // namespace

Result<std::vector<std::string>> Hdf5AttributeNames(hid_t obj, std::string_view path) {
  std::vector<std::string> names;
  hsize_t idx = 0;
  if (H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &idx, CollectName, &names) < 0) {
    return Err(Hdf5Error(Code::kCorruption, fmt::format("{}: listing attributes", path)));
  }
  return names;
}

Result<Hdf5Attribute> ReadHdf5Attribute(hid_t obj, std::string_view path, const std::string& name) {
  const std::string where = Where(path, name);
  Hdf5Attribute a;
  a.name = name;
  SLABFS_ASSIGN_OR_RETURN(H5Handle attr, Checked(H5Aopen(obj, name.c_str(), H5P_DEFAULT), Code::kCorruption, where));
  SLABFS_ASSIGN_OR_RETURN(H5Handle type, Checked(H5Aget_type(attr.get()), Code::kCorruption, where));
  SLABFS_ASSIGN_OR_RETURN(H5Handle space, Checked(H5Aget_space(attr.get()), Code::kCorruption, where));
  H5S_class_t space_class = H5Sget_simple_extent_type(space.get());
  if (space_class == H5S_NO_CLASS) return Err(Hdf5Error(Code::kCorruption, where));
  hssize_t npoints = space_class == H5S_NULL ? 0 : H5Sget_simple_extent_npoints(space.get());
  if (npoints < 0) return Err(Hdf5Error(Code::kCorruption, where));
  const auto points = static_cast<uint64_t>(npoints);

  if (H5Tget_class(type.get()) == H5T_STRING) {
    return ReadString(attr.get(), type.get(), space.get(), points, where, std::move(a));
  }
  TypeMatch m = MatchHdf5Type(type.get());
  if (!m.dtype) {
    a.why_not = m.why_not;
    return a;
  }
  if (points == 0) {
    a.why_not = "empty (no values)";
    return a;
  }
  const size_t item = ItemSize(*m.dtype);
  if (points > kMaxAttributeBytes / item) {
    a.why_not = fmt::format("{} values of {} (more than {} bytes)", points, DTypeName(*m.dtype), kMaxAttributeBytes);
    return a;
  }
  std::string raw(static_cast<size_t>(points) * item, '\0');
  SLABFS_RETURN_IF_ERROR_R(Checked(H5Aread(attr.get(), Hdf5TypeOf(*m.dtype), raw.data()), Code::kCorruption, where));
  a.value = Attribute::Numbers(*m.dtype, std::move(raw));
  return a;
}

std::optional<std::string> ReadHdf5StringAttribute(hid_t obj, const char* name) {
  htri_t exists = H5Aexists(obj, name);
  if (exists <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  auto a = ReadHdf5Attribute(obj, "", name);
  if (!a || !a->value || a->value->kind != Attribute::Kind::kString) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  return a->value->data;
}

Status WriteHdf5Attribute(hid_t obj, std::string_view path, const std::string& name, const Attribute& value,
                          std::optional<DType> file_type) {
  const std::string where = Where(path, name);
  if (H5Aexists(obj, name.c_str()) > 0) {
    SLABFS_RETURN_IF_ERROR(Checked(H5Adelete(obj, name.c_str()), Code::kIOError, where));
  }
  H5Eclear2(H5E_DEFAULT);
  if (value.kind == Attribute::Kind::kString) {
    const std::string& s = value.data;
    bool ascii = true;
    bool has_nul = false;
    for (char ch : s) {
      ascii = ascii && static_cast<unsigned char>(ch) < 0x80;
      has_nul = has_nul || ch == '\0';
    }
    SLABFS_ASSIGN_OR_RETURN(H5Handle type, Checked(H5Tcopy(H5T_C_S1), Code::kIOError, where));
    // HDF5 has no zero-size string type: "" is one NUL byte.
    const size_t size = s.empty() ? 1 : s.size();
    SLABFS_RETURN_IF_ERROR(Checked(H5Tset_size(type.get(), size), Code::kIOError, where));
    SLABFS_RETURN_IF_ERROR(
        Checked(H5Tset_strpad(type.get(), has_nul ? H5T_STR_NULLPAD : H5T_STR_NULLTERM), Code::kIOError, where));
    SLABFS_RETURN_IF_ERROR(
        Checked(H5Tset_cset(type.get(), ascii ? H5T_CSET_ASCII : H5T_CSET_UTF8), Code::kIOError, where));
    SLABFS_ASSIGN_OR_RETURN(H5Handle space, Checked(H5Screate(H5S_SCALAR), Code::kIOError, where));
    SLABFS_ASSIGN_OR_RETURN(H5Handle attr,
                            Checked(H5Acreate2(obj, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                                    Code::kIOError, where));
    std::string buf = s.empty() ? std::string(1, '\0') : s;
    SLABFS_RETURN_IF_ERROR(Checked(H5Awrite(attr.get(), type.get(), buf.data()), Code::kIOError, where));
    return attr.Close(where);
  }
  const uint64_t count = value.count();
  if (count == 0) return Status::InvalidArgument(where + ": no values");
  const hsize_t dims[1] = {count};
  H5Handle space(count == 1 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, dims, nullptr));
  if (!space.valid()) return Hdf5Error(Code::kIOError, where);
  const hid_t stored = Hdf5TypeOf(file_type.value_or(value.dtype));
  SLABFS_ASSIGN_OR_RETURN(
      H5Handle attr,
      Checked(H5Acreate2(obj, name.c_str(), stored, space.get(), H5P_DEFAULT, H5P_DEFAULT), Code::kIOError, where));
  SLABFS_RETURN_IF_ERROR(
      Checked(H5Awrite(attr.get(), Hdf5TypeOf(value.dtype), value.data.data()), Code::kIOError, where));
  return attr.Close(where);
}

}  // namespace slabfs::tools::convert
