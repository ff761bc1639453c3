// The Zarr metadata readers of `slab import` (tools/convert/zarr_json.h,
// zarr_metadata.h) on arbitrary bytes. The first byte picks the document:
// 0 a v2 .zarray, 1 a v3 array zarr.json, 2 a v3 group zarr.json, 3 a
// .zattrs (every member through the attribute reader), 4 a chunk key
// component. The rest is the document's text, parsed as the import parses
// a file (Python's NaN / Infinity accepted, nesting bounded). What the
// import does next with a parsed array runs too: its filters, chunk keys,
// fill value and attributes, and the JSON written back must read back the
// same.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tools/convert/zarr_json.h"
#include "tools/convert/zarr_metadata.h"

using namespace slabfs;
using namespace slabfs::tools::convert;

namespace {

__int128 Whole(const Json& v) {
  return v.is_number_unsigned() ? __int128{v.get<uint64_t>()} : __int128{v.get<int64_t>()};
}

// Equal documents, NaN equal to NaN (nlohmann's == says otherwise), an
// integer equal whether held signed or unsigned ("-0" reads back as 0).
bool Same(const Json& a, const Json& b) {
  if (a.is_number_integer() && b.is_number_integer()) return Whole(a) == Whole(b);
  if (a.is_number_float() && b.is_number_float()) {
    const double x = a.get<double>(), y = b.get<double>();
    return x == y || (x != x && y != y);
  }
  if (a.type() != b.type() || a.size() != b.size()) return false;
  if (a.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      auto other = b.find(it.key());
      if (other == b.end() || !Same(it.value(), *other)) return false;
    }
    return true;
  }
  if (a.is_array()) {
    for (size_t i = 0; i < a.size(); ++i) {
      if (!Same(a[i], b[i])) return false;
    }
    return true;
  }
  return a == b;
}

// The import maps every attribute of a .zattrs or "attributes" object; the
// export writes each one back as JSON.
void Attributes(const Json& attrs) {
  if (!attrs.is_object()) return;
  for (auto it = attrs.begin(); it != attrs.end(); ++it) {
    auto a = AttributeFromJson(it.value());
    if (!a) continue;
    if (a->data.size() > kMaxAttributeBytes) __builtin_trap();
    const Json json = AttributeToJson(*a);
    auto back = ParseJson(DumpJson(json), "back");
    if (!back || !Same(json, *back)) __builtin_trap();
  }
}

void Array(const ParsedArray& p) {
  const ZarrArray& a = p.array;
  Attributes(a.attributes);
  if (!p.unsupported.empty()) return;
  // What the import relies on once a document parses without a note.
  if (a.shape.empty() || a.shape.size() > static_cast<size_t>(kMaxRank) || a.chunks.size() != a.shape.size() ||
      a.fill.size() != ItemSize(a.dtype)) {
    __builtin_trap();
  }
  for (uint64_t c : a.chunks) {
    if (c == 0) __builtin_trap();
  }
  if (a.chunk_elements() * ItemSize(a.dtype) > (uint64_t{1} << 30)) __builtin_trap();
  if (!a.transpose.empty() && a.transpose.size() != a.shape.size()) __builtin_trap();
  (void)FiltersFor(a);
  Dims last(a.shape.size());
  for (size_t d = 0; d < a.shape.size(); ++d) {
    last[d] = a.shape[d] == 0 ? 0 : (a.shape[d] - 1) / a.chunks[d];
  }
  const std::string key = ChunkKey(a, last);
  if (key.empty()) __builtin_trap();
  (void)FillToJson(a.dtype, a.fill, a.zarr_format);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int kind = data[0] % 5;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (kind == 4) {
    auto v = ParseKeyIndex(text);
    if (v && std::to_string(*v) != text) __builtin_trap();  // canonical decimals only
    return 0;
  }
  auto j = ParseJson(text, "fuzz");
  if (!j) return 0;
  // What the export writes reads back the same (non-finite floats included).
  auto back = ParseJson(DumpJson(*j), "dumped");
  if (!back || !Same(*j, *back)) __builtin_trap();
  switch (kind) {
    case 0:
      if (auto p = ParseZarray(*j, ".zarray")) Array(*p);
      break;
    case 1:
      if (auto p = ParseV3Array(*j, "zarr.json")) Array(*p);
      break;
    case 2:
      if (auto attrs = ParseV3Group(*j, "zarr.json")) Attributes(*attrs);
      break;
    default: Attributes(*j);
  }
  return 0;
}
