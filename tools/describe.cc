#include "tools/describe.h"

#include <string>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

#include "tools/commands.h"

namespace slabfs::tools {
namespace {

uint64_t LoadLittleEndian(const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t{b[i]} << (8 * i);
  return v;
}

Json DimsToJson(const Dims& dims) {
  Json a = Json::array();
  for (uint64_t d : dims) {
    if (d == kUnlimited) {
      a.push_back(nullptr);
    } else {
      a.push_back(d);
    }
  }
  return a;
}

std::string_view KindName(ObjectKind k) { return k == ObjectKind::kGroup ? "group" : "dataset"; }

std::string FiltersText(const DatasetInfo& i) { return i.filters.empty() ? "none" : i.filters; }

std::string FillText(const DatasetInfo& i) {
  return i.fill.size() == ItemSize(i.dtype) ? FormatScalar(i.dtype, i.fill.data()) : std::string("?");
}

}  // namespace

Json ElementToJson(DType t, const void* element) {
  size_t n = ItemSize(t);
  if (IsFloat(t)) {
    // FormatScalar gives the shortest text that reads back as the same value
    // ("0.1" for an f4), which a JSON double then keeps.
    std::string text = FormatScalar(t, element);
    Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_number()) return j;
    return text;
  }
  uint64_t v = LoadLittleEndian(element, n);
  if (IsSigned(t)) {
    if (n < 8 && (v >> (8 * n - 1)) != 0) v |= ~uint64_t{0} << (8 * n);
    return static_cast<int64_t>(v);
  }
  return v;
}

Json AttributeToJson(const Attribute& a) {
  if (a.kind == Attribute::Kind::kString) return a.data;
  size_t item = ItemSize(a.dtype);
  uint64_t count = a.data.size() / item;
  if (count == 1) return ElementToJson(a.dtype, a.data.data());
  Json arr = Json::array();
  for (uint64_t i = 0; i < count; ++i) arr.push_back(ElementToJson(a.dtype, a.data.data() + i * item));
  return arr;
}

std::string_view SkippedOwner(const SkippedObject& s) {
  std::string_view p = s.path;
  size_t at = p.find(" attribute '");
  return at == std::string_view::npos ? p : p.substr(0, at);
}

std::string SkippedLine(const SkippedObject& s) { return fmt::format("skipped: {}: {}", s.path, s.reason); }

Result<Description> Describe(const Store& c, std::string_view path) {
  Description d;
  auto id = c.Resolve(path);
  if (!id) return Err(AddContext(id.error(), path));
  auto object = c.Stat(*id);
  if (!object) return Err(AddContext(object.error(), path));
  d.object = *object;
  auto canonical = c.PathOf(*id);
  d.path = canonical ? *canonical : std::string(path);
  if (d.object.kind == ObjectKind::kDataset) {
    auto ds = c.OpenDataset(*id);
    if (!ds) return Err(AddContext(ds.error(), d.path));
    d.dataset = (*ds)->info().dataset;
    if (!d.dataset->sparse) {
      // DatasetInfo counts defined elements for sparse datasets only; for a
      // dense one they are those of its stored chunks.
      auto defined = (*ds)->CountDefined();
      if (!defined) return Err(AddContext(defined.error(), d.path));
      d.dataset->defined_elements = *defined;
    }
  }
  d.foreign = c.format() != "slab";
  if (d.foreign) {
    // The object's own skipped attributes, and a group's skipped children.
    const bool group = d.object.kind == ObjectKind::kGroup;
    for (SkippedObject& s : c.Skipped()) {
      std::string_view owner = SkippedOwner(s);
      if (owner == d.path || (group && owner == s.path && owner != "/" && ParentPath(owner) == d.path)) {
        d.skipped.push_back(std::move(s));
      }
    }
  }
  auto names = c.ListAttributes(*id);
  if (!names) return Err(AddContext(names.error(), d.path));
  for (const std::string& name : *names) {
    auto value = c.GetAttribute(*id, name);
    if (!value) return Err(AddContext(value.error(), d.path));
    d.attributes.emplace_back(name, std::move(*value));
  }
  return d;
}

Json DescriptionToJson(const Description& d) {
  Json j;
  j["path"] = d.path;
  j["kind"] = KindName(d.object.kind);
  j["id"] = d.object.id;
  if (d.dataset) {
    const DatasetInfo& i = *d.dataset;
    const Json fill = i.fill.size() == ItemSize(i.dtype) ? ElementToJson(i.dtype, i.fill.data()) : Json(nullptr);
    VisitFields(i, [&i, &j, &fill](std::string_view name, const auto& value) {
      using T = std::decay_t<decltype(value)>;
      const std::string key(name);
      if constexpr (std::is_same_v<T, DType>) {
        j[key] = DTypeName(value);
      } else if constexpr (std::is_same_v<T, IndexKind>) {
        j[key] = IndexKindName(value);
      } else if constexpr (std::is_same_v<T, Dims>) {
        j[key] = DimsToJson(value);
      } else if constexpr (std::is_same_v<T, std::string>) {
        j[key] = name == "fill" ? fill : Json(FiltersText(i));
      } else if constexpr (std::is_same_v<T, bool>) {
        if (name != "length_resizable") j[key] = value;
      } else {
        j[key] = value;
        if (name == "stored_bytes") {
          j["compression_ratio"] = i.stored_bytes == 0
                                       ? Json(nullptr)
                                       : Json(static_cast<double>(i.size_bytes) / static_cast<double>(i.stored_bytes));
        }
      }
    });
  } else {
    j["num_children"] = d.object.num_children;
  }
  Json attrs = Json::object();
  for (const auto& [name, value] : d.attributes) attrs[name] = AttributeToJson(value);
  j["attributes"] = std::move(attrs);
  if (d.foreign) {
    Json skipped = Json::array();
    for (const SkippedObject& s : d.skipped) skipped.push_back({{"path", s.path}, {"reason", s.reason}});
    j["skipped"] = std::move(skipped);
  }
  return j;
}

std::string DescriptionToText(const Description& d) {
  std::string out;
  auto line = [&out](std::string_view key, const auto& value) { out += fmt::format("{}: {}\n", key, value); };
  line("path", d.path);
  line("kind", KindName(d.object.kind));
  line("id", d.object.id);
  if (d.dataset) {
    const DatasetInfo& i = *d.dataset;
    VisitFields(i, [&i, &line](std::string_view name, const auto& value) {
      using T = std::decay_t<decltype(value)>;
      if constexpr (std::is_same_v<T, DType>) {
        line(name, DTypeName(value));
      } else if constexpr (std::is_same_v<T, IndexKind>) {
        line(name, IndexKindName(value));
      } else if constexpr (std::is_same_v<T, Dims>) {
        line(name, FormatDims(value));
      } else if constexpr (std::is_same_v<T, std::string>) {
        line(name, name == "fill" ? FillText(i) : FiltersText(i));
      } else if constexpr (std::is_same_v<T, bool>) {
        if (name != "length_resizable") line(name, value ? "yes" : "no");
      } else {
        line(name, value);
        if (name == "stored_bytes") line("compression_ratio", FormatRatio(i.size_bytes, i.stored_bytes));
      }
    });
  } else {
    line("num_children", d.object.num_children);
  }
  line("attributes", d.attributes.size());
  for (const auto& [name, value] : d.attributes) out += fmt::format("  {} = {}\n", name, value.ToText());
  for (const SkippedObject& s : d.skipped) out += SkippedLine(s) + "\n";
  return out;
}

}  // namespace slabfs::tools
