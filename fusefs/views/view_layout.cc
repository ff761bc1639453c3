#include "fusefs/views/view_layout.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "slabfs/npy.h"
#include "slabfs/slice.h"

namespace slabfs::fusefs::views {
namespace {

template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::string FloatText(double v, int digits) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

// Boxes of [first, first + count) of an array of `shape`, C order: the
// box's start and count per dimension, and its offset from `first`.
Status Decompose(const Dims& shape, size_t d, Dims& start, Dims& cnt, uint64_t first, uint64_t count, uint64_t offset,
                 const std::function<Status(const Dims&, const Dims&, uint64_t)>& emit) {
  if (count == 0) return Status::OK();
  const size_t rank = shape.size();
  if (d + 1 == rank) {
    start[d] = first;
    cnt[d] = count;
    return emit(start, cnt, offset);
  }
  uint64_t inner = 1;
  for (size_t k = d + 1; k < rank; ++k) inner *= shape[k];
  uint64_t i = first / inner;
  const uint64_t rem = first % inner;
  if (rem != 0) {  // the end of a partial row
    const uint64_t take = std::min(count, inner - rem);
    start[d] = i;
    cnt[d] = 1;
    SLABFS_RETURN_IF_ERROR(Decompose(shape, d + 1, start, cnt, rem, take, offset, emit));
    count -= take;
    offset += take;
    ++i;
  }
  const uint64_t full = count / inner;
  if (full > 0) {  // whole rows
    start[d] = i;
    cnt[d] = full;
    for (size_t k = d + 1; k < rank; ++k) {
      start[k] = 0;
      cnt[k] = shape[k];
    }
    SLABFS_RETURN_IF_ERROR(emit(start, cnt, offset));
    count -= full * inner;
    offset += full * inner;
    i += full;
  }
  if (count > 0) {  // the start of a partial row
    start[d] = i;
    cnt[d] = 1;
    SLABFS_RETURN_IF_ERROR(Decompose(shape, d + 1, start, cnt, 0, count, offset, emit));
  }
  return Status::OK();
}

}  // namespace

size_t FieldWidth(DType dtype) {
  switch (dtype) {
    case DType::kI1: return 4;
    case DType::kU1: return 3;
    case DType::kI2: return 6;
    case DType::kU2: return 5;
    case DType::kI4: return 11;
    case DType::kU4: return 10;
    case DType::kI8: return 20;
    case DType::kU8: return 20;
    case DType::kF4: return 15;  // -1.23456789e+38
    case DType::kF8: return 24;  // -1.2345678901234567e+308
  }
  return 24;
}

std::string FormatField(DType dtype, const char* p) {
  std::string s;
  switch (dtype) {
    case DType::kI1: s = std::to_string(Load<int8_t>(p)); break;
    case DType::kU1: s = std::to_string(Load<uint8_t>(p)); break;
    case DType::kI2: s = std::to_string(Load<int16_t>(p)); break;
    case DType::kU2: s = std::to_string(Load<uint16_t>(p)); break;
    case DType::kI4: s = std::to_string(Load<int32_t>(p)); break;
    case DType::kU4: s = std::to_string(Load<uint32_t>(p)); break;
    case DType::kI8: s = std::to_string(Load<int64_t>(p)); break;
    case DType::kU8: s = std::to_string(Load<uint64_t>(p)); break;
    case DType::kF4: s = FloatText(Load<float>(p), 9); break;
    case DType::kF8: s = FloatText(Load<double>(p), 17); break;
  }
  const size_t w = FieldWidth(dtype);
  if (s.size() < w) s.insert(0, w - s.size(), ' ');
  return s;
}

Result<ViewLayout> ResolveView(ViewKind kind, const std::optional<std::string>& slice, const DatasetInfo& info) {
  ViewLayout v;
  v.kind = kind;
  v.dtype = info.dtype;
  if (slice) {
    SLABFS_ASSIGN_OR_RETURN(v.sel, ParseSlice(*slice, info.shape));
  } else {
    v.sel = Slab::All(info.shape);
  }
  v.elements = 1;
  for (const DimSlab& d : v.sel.dims) {
    v.shape.push_back(d.count);
    v.elements *= d.count;
  }
  const uint64_t isz = ItemSize(info.dtype);
  switch (kind) {
    case ViewKind::kRaw: v.size_bytes = v.elements * isz; break;
    case ViewKind::kNpy:
      v.header = EncodeNpyHeader(info.dtype, v.shape);
      v.size_bytes = v.header.size() + v.elements * isz;
      break;
    case ViewKind::kText:
      v.row_elements = v.shape.empty() ? 1 : v.shape.back();
      v.size_bytes = v.elements * (FieldWidth(info.dtype) + 1);
      break;
    case ViewKind::kPng:
      v.size_bytes = 0;  // known once encoded (AttachPicture)
      break;
  }
  return v;
}

Status ForEachElementBox(const ViewLayout& v, uint64_t first, uint64_t count,
                         const std::function<Status(const Slab& sub, uint64_t offset)>& fn) {
  if (count == 0) return Status::OK();
  const size_t rank = v.shape.size();
  if (rank == 0) return fn(v.sel, 0);
  Dims start(rank), cnt(rank);
  return Decompose(v.shape, 0, start, cnt, first, count, 0, [&](const Dims& s, const Dims& c, uint64_t off) {
    Slab sub;
    sub.dims.resize(rank);
    for (size_t d = 0; d < rank; ++d) {
      const DimSlab& in = v.sel.dims[d];
      sub.dims[d].start = in.start + s[d] * in.stride;
      sub.dims[d].count = c[d];
      sub.dims[d].stride = c[d] <= 1 ? 1 : in.stride;
      sub.dims[d].block = 1;
    }
    return fn(sub, off);
  });
}

}  // namespace slabfs::fusefs::views
