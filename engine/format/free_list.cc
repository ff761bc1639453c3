#include "engine/format/free_list.h"

#include "engine/format/layout.h"
#include "engine/util/coding.h"

namespace slabfs::engine {

size_t FreeListPayloadBytes(size_t slots) { return 8 + 16 * slots; }

std::string EncodeFreeList(const std::vector<Extent>& extents, size_t slots) {
  std::string s;
  s.reserve(FreeListPayloadBytes(slots));
  PutU64(&s, slots);
  for (const auto& e : extents) {
    PutU64(&s, e.addr);
    PutU64(&s, e.len);
  }
  for (size_t i = extents.size(); i < slots; ++i) {
    PutU64(&s, 0);
    PutU64(&s, 0);
  }
  return s;
}

Result<std::vector<Extent>> DecodeFreeList(std::string_view payload, uint64_t file_end) {
  Reader r(payload);
  uint64_t n;
  if (!r.U64(&n) || n > r.remaining() / 16) return Err(Status::Corruption("free list: bad count"));
  std::vector<Extent> out;
  uint64_t prev_end = kDataStart;
  for (uint64_t i = 0; i < n; ++i) {
    Extent e;
    if (!r.U64(&e.addr) || !r.U64(&e.len)) return Err(Status::Corruption("free list is truncated"));
    if (e.len == 0) continue;
    if (e.addr < prev_end || e.addr > file_end || file_end - e.addr < e.len)
      return Err(Status::Corruption("free list: extent out of order or out of bounds"));
    prev_end = e.addr + e.len;
    out.push_back(e);
  }
  if (!r.done()) return Err(Status::Corruption("free list: trailing bytes"));
  return out;
}

}  // namespace slabfs::engine
