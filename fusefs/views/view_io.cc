#include "fusefs/views/view_io.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace slabfs::fusefs::views {
namespace {

Status ReadElements(const FileData& ds, const ViewLayout& v, uint64_t first, uint64_t count, char* out) {
  const uint64_t isz = ItemSize(v.dtype);
  return ForEachElementBox(v, first, count,
                           [&](const Slab& sub, uint64_t offset) { return ds.Read(sub, out + offset * isz); });
}

Status WriteElements(Dataset& ds, const ViewLayout& v, uint64_t first, uint64_t count, const char* in) {
  const uint64_t isz = ItemSize(v.dtype);
  return ForEachElementBox(v, first, count,
                           [&](const Slab& sub, uint64_t offset) { return ds.Write(sub, in + offset * isz); });
}

// Raw bytes [off, end) of the elements, into out.
Status ReadRaw(const FileData& ds, const ViewLayout& v, uint64_t off, uint64_t end, char* out) {
  if (off >= end) return Status::OK();
  const uint64_t isz = ItemSize(v.dtype);
  const uint64_t e0 = off / isz, e1 = (end + isz - 1) / isz;
  if (off % isz == 0 && end % isz == 0) return ReadElements(ds, v, e0, e1 - e0, out);
  std::vector<char> tmp((e1 - e0) * isz);
  SLABFS_RETURN_IF_ERROR(ReadElements(ds, v, e0, e1 - e0, tmp.data()));
  std::memcpy(out, tmp.data() + (off - e0 * isz), end - off);
  return Status::OK();
}

Status ReadText(const FileData& ds, const ViewLayout& v, uint64_t off, uint64_t end, char* out) {
  const uint64_t isz = ItemSize(v.dtype);
  const uint64_t w = FieldWidth(v.dtype) + 1;
  const uint64_t e0 = off / w, e1 = (end + w - 1) / w;
  std::vector<char> values((e1 - e0) * isz);
  SLABFS_RETURN_IF_ERROR(ReadElements(ds, v, e0, e1 - e0, values.data()));
  std::string text;
  text.reserve((e1 - e0) * w);
  for (uint64_t e = e0; e < e1; ++e) {
    text += FormatField(v.dtype, values.data() + (e - e0) * isz);
    text += (e + 1) % v.row_elements == 0 ? '\n' : ' ';
  }
  std::memcpy(out, text.data() + (off - e0 * w), end - off);
  return Status::OK();
}

}  // namespace

Result<size_t> ReadView(const FileData& ds, const ViewLayout& v, uint64_t off, size_t len, char* buf) {
  if (off >= v.size_bytes || len == 0) return size_t{0};
  const uint64_t end = off + std::min<uint64_t>(len, v.size_bytes - off);
  switch (v.kind) {
    case ViewKind::kRaw: SLABFS_RETURN_IF_ERROR_R(ReadRaw(ds, v, off, end, buf)); break;
    case ViewKind::kNpy: {
      const uint64_t h = v.header.size();
      uint64_t pos = off;
      if (pos < h) {
        const uint64_t n = std::min(end, h) - pos;
        std::memcpy(buf, v.header.data() + pos, n);
        pos += n;
      }
      if (pos < end) SLABFS_RETURN_IF_ERROR_R(ReadRaw(ds, v, pos - h, end - h, buf + (pos - off)));
      break;
    }
    case ViewKind::kText: SLABFS_RETURN_IF_ERROR_R(ReadText(ds, v, off, end, buf)); break;
    case ViewKind::kPng:
      if (v.png == nullptr) return size_t{0};
      return v.png->ReadAt(off, static_cast<size_t>(end - off), buf);
  }
  return static_cast<size_t>(end - off);
}

Status WriteView(Dataset& ds, const ViewLayout& v, uint64_t off, size_t len, const char* buf) {
  if (v.kind != ViewKind::kRaw) return Status::NotSupported("the .npy, .txt and .png views are read-only");
  if (off > v.size_bytes || len > v.size_bytes - off) {
    return Status::OutOfRange(
        fmt::format("a write of {} bytes at {} reaches past the end of the view ({} bytes)", len, off, v.size_bytes));
  }
  if (len == 0) return Status::OK();
  const uint64_t isz = ItemSize(v.dtype);
  const uint64_t end = off + len;
  const uint64_t e0 = off / isz, e1 = (end + isz - 1) / isz;
  if (off % isz == 0 && end % isz == 0) return WriteElements(ds, v, e0, e1 - e0, buf);
  std::vector<char> tmp((e1 - e0) * isz);
  SLABFS_RETURN_IF_ERROR(ReadElements(FileData(ds), v, e0, e1 - e0, tmp.data()));
  std::memcpy(tmp.data() + (off - e0 * isz), buf, len);
  return WriteElements(ds, v, e0, e1 - e0, tmp.data());
}

}  // namespace slabfs::fusefs::views
