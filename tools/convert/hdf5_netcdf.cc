#include "tools/convert/hdf5_netcdf.h"

#include <hdf5_hl.h>

#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/convert/hdf5_attrs.h"
#include "tools/convert/hdf5_util.h"

namespace slabfs::tools::convert {
namespace {

// The link name of an open object (from libhdf5's path for it).
std::optional<std::string> LinkName(hid_t obj) {
  ssize_t n = H5Iget_name(obj, nullptr, 0);
  if (n <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  std::string path(static_cast<size_t>(n) + 1, '\0');
  if (H5Iget_name(obj, path.data(), path.size()) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  path.resize(static_cast<size_t>(n));
  return BaseName(path);
}

struct FirstScale {
  std::optional<std::string> name;
};

herr_t TakeFirstScale(hid_t, unsigned, hid_t scale, void* data) {
  static_cast<FirstScale*>(data)->name = LinkName(scale);
  return 1;  // stop: the first scale names the dimension
}

herr_t CollectDataset(hid_t, const char* name, const H5O_info_t* info, void* data) {
  if (info->type == H5O_TYPE_DATASET) {
    static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  }
  return 0;
}

// The integers of a numeric attribute (for _Netcdf4Dimid and
// _Netcdf4Coordinates), or nullopt.
std::optional<std::vector<int64_t>> ReadIntegers(hid_t obj, const char* name) {
  if (H5Aexists(obj, name) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  auto a = ReadHdf5Attribute(obj, "", name);
  if (!a || !a->value || a->value->kind != Attribute::Kind::kNumeric || IsFloat(a->value->dtype)) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  std::vector<int64_t> out;
  const size_t item = ItemSize(a->value->dtype);
  for (size_t i = 0; i + item <= a->value->data.size(); i += item) {
    const char* p = a->value->data.data() + i;
    int64_t v = 0;
    switch (a->value->dtype) {
      case DType::kI1: {
        int8_t x;
        std::memcpy(&x, p, 1);
        v = x;
        break;
      }
      case DType::kI2: {
        int16_t x;
        std::memcpy(&x, p, 2);
        v = x;
        break;
      }
      case DType::kI4: {
        int32_t x;
        std::memcpy(&x, p, 4);
        v = x;
        break;
      }
      case DType::kU1: {
        uint8_t x;
        std::memcpy(&x, p, 1);
        v = x;
        break;
      }
      case DType::kU2: {
        uint16_t x;
        std::memcpy(&x, p, 2);
        v = x;
        break;
      }
      case DType::kU4: {
        uint32_t x;
        std::memcpy(&x, p, 4);
        v = x;
        break;
      }
      default: {
        std::memcpy(&v, p, 8);
        break;
      }
    }
    out.push_back(v);
  }
  return out;
}

std::string ParentOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

bool IsDimensionBookkeeping(std::string_view name, bool is_scale) {
  if (name == "DIMENSION_LIST" || name == "REFERENCE_LIST" || name == "_Netcdf4Dimid" ||
      name == "_Netcdf4Coordinates" || name == "_nc3_strict" || name == "_NCProperties") {
    return true;
  }
  return is_scale && (name == "CLASS" || name == "NAME");
}

std::string DimensionsJson(const std::vector<std::string>& names) {
  nlohmann::json j = nlohmann::json::array();
  for (const std::string& n : names) j.push_back(n);
  // Names are bytes; a name that is not UTF-8 is escaped rather than refused.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<std::vector<std::string>> ParseDimensionsJson(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return std::nullopt;
  std::vector<std::string> names;
  for (const auto& e : j) {
    if (!e.is_string()) return std::nullopt;
    names.push_back(e.get<std::string>());
  }
  return names;
}

std::string DimensionNameOfScale(std::string_view link_name) {
  if (link_name.starts_with(kNetcdfNonCoordPrefix) && link_name.size() > kNetcdfNonCoordPrefix.size()) {
    link_name.remove_prefix(kNetcdfNonCoordPrefix.size());
  }
  return std::string(link_name);
}

std::string NetcdfVariableName(std::string_view link_name) { return DimensionNameOfScale(link_name); }

bool DimensionNamer::IsScale(hid_t dset) const {
  htri_t r = H5DSis_scale(dset);
  H5Eclear2(H5E_DEFAULT);
  return r > 0;
}

bool DimensionNamer::IsPlaceholder(hid_t dset) const {
  if (!IsScale(dset)) return false;
  auto name = ReadHdf5StringAttribute(dset, "NAME");
  return name && name->starts_with(kNetcdfDimOnly);
}

Status DimensionNamer::LoadDimids() {
  dimids_loaded_ = true;
  std::vector<std::string> paths;
  if (H5Ovisit2(file_, H5_INDEX_NAME, H5_ITER_INC, CollectDataset, &paths, H5O_INFO_BASIC) < 0) {
    return Hdf5Error(Code::kCorruption, "walking the file for netCDF dimension ids");
  }
  for (const std::string& p : paths) {
    hid_t d = H5Dopen2(file_, p.c_str(), H5P_DEFAULT);
    if (d < 0) {
      H5Eclear2(H5E_DEFAULT);
      continue;
    }
    H5Handle dset(d);
    if (!IsScale(d)) continue;
    auto id = ReadIntegers(d, "_Netcdf4Dimid");
    if (id && id->size() == 1) dimids_.emplace((*id)[0], DimensionNameOfScale(BaseName(p)));
  }
  return Status::OK();
}

Result<std::optional<std::vector<std::string>>> DimensionNamer::Names(hid_t dset, std::string_view path, int rank) {
  using Names = std::vector<std::string>;
  if (IsScale(dset)) {
    const std::string own = DimensionNameOfScale(BaseName(path));
    if (rank == 1) return std::optional<Names>(Names{own});
    // A netCDF coordinate variable of several dimensions: its dimension ids.
    auto ids = ReadIntegers(dset, "_Netcdf4Coordinates");
    if (!ids || ids->size() != static_cast<size_t>(rank)) return std::optional<Names>();
    if (!dimids_loaded_) SLABFS_RETURN_IF_ERROR_R(LoadDimids());
    Names names;
    for (int64_t id : *ids) {
      auto it = dimids_.find(id);
      if (it == dimids_.end()) return std::optional<Names>();
      names.push_back(it->second);
    }
    return std::optional<Names>(std::move(names));
  }
  Names names;
  for (int d = 0; d < rank; ++d) {
    int n = H5DSget_num_scales(dset, static_cast<unsigned>(d));
    if (n <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return std::optional<Names>();
    }
    FirstScale first;
    int idx = 0;
    if (H5DSiterate_scales(dset, static_cast<unsigned>(d), &idx, TakeFirstScale, &first) < 0 || !first.name) {
      return Err(Hdf5Error(Code::kCorruption, fmt::format("{}: reading the scale of dimension {}", path, d)));
    }
    names.push_back(DimensionNameOfScale(*first.name));
  }
  return std::optional<Names>(std::move(names));
}

ScalePlan PlanDimensionScales(const std::vector<DimensionUser>& datasets, const std::vector<std::string>& groups) {
  const size_t n = datasets.size();
  ScalePlan plan;
  plan.is_scale.assign(n, false);
  plan.attach.resize(n);
  plan.named.assign(n, false);
  std::unordered_map<std::string, size_t> by_path;
  for (size_t i = 0; i < n; ++i) by_path.emplace(datasets[i].path, i);
  const std::unordered_set<std::string> group_paths(groups.begin(), groups.end());

  auto fits = [&](size_t j, const std::string& name, uint64_t length, uint64_t max) {
    const DimensionUser& c = datasets[j];
    if (c.shape.size() != 1) return false;
    if (c.dims && !(c.dims->size() == 1 && (*c.dims)[0] == name)) return false;
    if (c.shape[0] == length) return true;
    return c.max_shape[0] == kUnlimited && max == kUnlimited;
  };
  // Placeholders asked for, by path: what each user needs of it.
  struct Wanted {
    uint64_t length = 0;
    bool unlimited = false;
    bool conflict = false;
    bool used = false;
    size_t index = 0;
  };
  std::unordered_map<std::string, Wanted> wanted;
  std::vector<std::vector<std::string>> wanted_by(n);  // placeholder path per dimension ("" none)

  std::vector<bool> resolvable(n, false);
  for (size_t i = 0; i < n; ++i) {
    const DimensionUser& u = datasets[i];
    plan.attach[i].assign(u.shape.size(), ScaleRef{});
    wanted_by[i].assign(u.shape.size(), std::string());
    if (!u.dims || u.dims->size() != u.shape.size() || u.shape.empty()) continue;
    bool all = true;
    for (size_t d = 0; d < u.shape.size(); ++d) {
      const std::string& name = (*u.dims)[d];
      if (ValidateName(name).ok() == false) {
        all = false;
        break;
      }
      if (u.shape.size() == 1 && name == BaseName(u.path)) continue;  // its own dimension
      std::optional<size_t> found;
      for (std::string g = u.group;; g = ParentOf(g)) {
        auto it = by_path.find(JoinPath(g, name));
        if (it != by_path.end()) {
          found = it->second;
          break;
        }
        if (g == "/") break;
      }
      if (found && *found != i && datasets[*found].group != u.group &&
          !fits(*found, name, u.shape[d], u.max_shape[d])) {
        // An ancestor's dimension of that name has another length: this
        // group has a dimension of its own that shadows it (netCDF lets a
        // group define a name its parent has); a placeholder here.
        found.reset();
      }
      if (found) {
        if (*found == i || !fits(*found, name, u.shape[d], u.max_shape[d])) {
          all = false;
          break;
        }
        plan.attach[i][d] = {ScaleRef::Kind::kDataset, *found};
        continue;
      }
      const std::string path = JoinPath(u.group, name);
      if (group_paths.contains(path)) {
        all = false;
        break;
      }
      const bool unlimited = u.max_shape[d] == kUnlimited;
      auto [it, fresh] = wanted.try_emplace(path);
      Wanted& w = it->second;
      if (fresh) {
        w.length = u.shape[d];
        w.unlimited = unlimited;
      } else if (w.unlimited != unlimited || (!unlimited && w.length != u.shape[d])) {
        w.conflict = true;
      } else {
        w.length = std::max(w.length, u.shape[d]);
      }
      wanted_by[i][d] = path;
    }
    resolvable[i] = all;
  }
  for (size_t i = 0; i < n; ++i) {
    const DimensionUser& u = datasets[i];
    bool all = resolvable[i];
    for (size_t d = 0; all && d < u.shape.size(); ++d) {
      if (!wanted_by[i][d].empty() && wanted.at(wanted_by[i][d]).conflict) all = false;
    }
    if (!all) {
      plan.attach[i].assign(u.shape.size(), ScaleRef{});
      continue;
    }
    plan.named[i] = true;
    if (u.shape.size() == 1 && (*u.dims)[0] == BaseName(u.path)) plan.is_scale[i] = true;
    for (size_t d = 0; d < u.shape.size(); ++d) {
      if (plan.attach[i][d].kind == ScaleRef::Kind::kDataset) {
        plan.is_scale[plan.attach[i][d].index] = true;
      } else if (!wanted_by[i][d].empty()) {
        Wanted& w = wanted.at(wanted_by[i][d]);
        if (!w.used) {
          w.used = true;
          w.index = plan.placeholders.size();
          plan.placeholders.push_back({wanted_by[i][d], w.length, w.unlimited});
        }
        plan.attach[i][d] = {ScaleRef::Kind::kPlaceholder, w.index};
      }
    }
  }
  return plan;
}

}  // namespace slabfs::tools::convert
