#include "tools/convert/hdf5_util.h"

#include <H5PLpublic.h>

#include <vector>

#include <fmt/format.h>

namespace slabfs::tools::convert {
namespace {

herr_t CloseId(hid_t id) {
  switch (H5Iget_type(id)) {
    case H5I_FILE: return H5Fclose(id);
    case H5I_GROUP: return H5Gclose(id);
    case H5I_DATASET: return H5Dclose(id);
    case H5I_DATATYPE: return H5Tclose(id);
    case H5I_DATASPACE: return H5Sclose(id);
    case H5I_ATTR: return H5Aclose(id);
    case H5I_GENPROP_LST: return H5Pclose(id);
    default: return H5Idec_ref(id) < 0 ? -1 : 0;
  }
}

struct StackText {
  std::vector<std::string> descs;  // outermost first
  std::string minor;               // of the innermost entry
};

herr_t CollectEntry(unsigned, const H5E_error2_t* e, void* data) {
  auto* text = static_cast<StackText*>(data);
  if (e->desc != nullptr && e->desc[0] != '\0') text->descs.emplace_back(e->desc);
  char minor[256];
  H5E_type_t type;
  if (H5Eget_msg(e->min_num, &type, minor, sizeof minor) > 0) text->minor = minor;
  return 0;
}

}  // namespace

void H5Handle::Reset() {
  if (id_ >= 0) {
    (void)CloseId(id_);
    H5Eclear2(H5E_DEFAULT);
  }
  id_ = H5I_INVALID_HID;
}

Status H5Handle::Close(std::string_view what) {
  if (id_ < 0) return Status::OK();
  herr_t r = CloseId(std::exchange(id_, H5I_INVALID_HID));
  return Checked(r, Code::kIOError, what);
}

Status Hdf5Error(Code code, std::string_view what) {
  StackText text;
  hid_t stack = H5Eget_current_stack();  // also clears the default stack
  if (stack >= 0) {
    (void)H5Ewalk2(stack, H5E_WALK_DOWNWARD, CollectEntry, &text);
    (void)H5Eclose_stack(stack);
  }
  std::string msg(what);
  if (!text.descs.empty()) {
    msg += ": " + text.descs.front();
    std::string inner = text.descs.size() > 1 ? text.descs.back() : std::string();
    if (!text.minor.empty() && text.minor != inner && text.minor != text.descs.front()) {
      inner = inner.empty() ? text.minor : inner + ", " + text.minor;
    }
    if (!inner.empty()) msg += " (" + inner + ")";
  } else {
    msg += ": libhdf5 failed";
  }
  return Status(code, std::move(msg));
}

Result<H5Handle> Checked(hid_t id, Code code, std::string_view what) {
  if (id < 0) return Err(Hdf5Error(code, what));
  return H5Handle(id);
}

Status Checked(herr_t r, Code code, std::string_view what) { return r < 0 ? Hdf5Error(code, what) : Status::OK(); }

Hdf5Session::Hdf5Session() {
  (void)H5open();
  (void)H5Eget_auto2(H5E_DEFAULT, &old_func_, &old_data_);
  (void)H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  if (H5PLget_loading_state(&old_plugins_) < 0) old_plugins_ = H5PL_ALL_PLUGIN;
  (void)H5PLset_loading_state(0);
  H5Eclear2(H5E_DEFAULT);
}

Hdf5Session::~Hdf5Session() {
  (void)H5PLset_loading_state(old_plugins_);
  (void)H5Eset_auto2(H5E_DEFAULT, old_func_, old_data_);
}

hid_t Hdf5TypeOf(DType t) {
  switch (t) {
    case DType::kI1: return H5T_STD_I8LE;
    case DType::kI2: return H5T_STD_I16LE;
    case DType::kI4: return H5T_STD_I32LE;
    case DType::kI8: return H5T_STD_I64LE;
    case DType::kU1: return H5T_STD_U8LE;
    case DType::kU2: return H5T_STD_U16LE;
    case DType::kU4: return H5T_STD_U32LE;
    case DType::kU8: return H5T_STD_U64LE;
    case DType::kF4: return H5T_IEEE_F32LE;
    case DType::kF8: return H5T_IEEE_F64LE;
  }
  return H5T_STD_U8LE;
}

TypeMatch MatchHdf5Type(hid_t type) {
  const size_t size = H5Tget_size(type);
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: {
      const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
      switch (size) {
        case 1: return {is_signed ? DType::kI1 : DType::kU1, ""};
        case 2: return {is_signed ? DType::kI2 : DType::kU2, ""};
        case 4: return {is_signed ? DType::kI4 : DType::kU4, ""};
        case 8: return {is_signed ? DType::kI8 : DType::kU8, ""};
        default: return {std::nullopt, fmt::format("{}-bit integer", size * 8)};
      }
    }
    case H5T_FLOAT:
      if (size == 4) return {DType::kF4, ""};
      if (size == 8) return {DType::kF8, ""};
      return {std::nullopt, fmt::format("{}-bit float", size * 8)};
    case H5T_STRING: {
      htri_t vlen = H5Tis_variable_str(type);
      H5Eclear2(H5E_DEFAULT);
      return {std::nullopt, vlen > 0 ? "variable-length string" : "fixed-length string"};
    }
    case H5T_COMPOUND: return {std::nullopt, "compound"};
    case H5T_ENUM: return {std::nullopt, "enum (or bool)"};
    case H5T_VLEN: return {std::nullopt, "variable-length sequence"};
    case H5T_ARRAY: return {std::nullopt, "array-of-elements type"};
    case H5T_REFERENCE: return {std::nullopt, "reference"};
    case H5T_OPAQUE: return {std::nullopt, "opaque"};
    case H5T_BITFIELD: return {std::nullopt, "bitfield"};
    case H5T_TIME: return {std::nullopt, "time"};
    default: break;
  }
  H5Eclear2(H5E_DEFAULT);
  return {std::nullopt, "unknown type"};
}

std::vector<hsize_t> ToHsize(const Dims& dims) { return {dims.begin(), dims.end()}; }

Dims FromHsize(const hsize_t* dims, size_t rank) { return Dims(dims, dims + rank); }

std::string Hdf5FilterName(H5Z_filter_t id, const char* stored) {
  switch (id) {
    case H5Z_FILTER_SZIP: return "szip";
    case H5Z_FILTER_NBIT: return "nbit";
    case H5Z_FILTER_SCALEOFFSET: return "scaleoffset";
    case 307: return "bzip2";
    case 32000: return "lzf";
    case 32001: return "blosc";
    case 32004: return "lz4";
    case 32008: return "bitshuffle";
    case 32013: return "zfp";
    case 32015: return "zstd";
    case 32017: return "sz";
    case 32026: return "blosc2";
    default: break;
  }
  return stored != nullptr && stored[0] != '\0' ? std::string(stored) : "unknown";
}

}  // namespace slabfs::tools::convert
