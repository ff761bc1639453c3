#include "engine/format/free_list.h"

#include "engine/format/layout.h"
#include "engine/util/coding.h"

namespace slabfs::engine {
namespace {

constexpr size_t kEntryBytesV1 = 16;
constexpr size_t kEntryBytesV2 = 32;

}  // namespace

size_t FreeListPayloadBytes(size_t slots) { return 8 + kEntryBytesV2 * slots; }

std::string EncodeFreeList(const std::vector<FreedExtent>& extents, size_t slots) {
  std::string s;
  s.reserve(FreeListPayloadBytes(slots));
  PutU64(&s, slots);
  for (const auto& e : extents) {
    PutU64(&s, e.addr);
    PutU64(&s, e.len);
    PutU64(&s, e.generation);
    PutU64(&s, static_cast<uint64_t>(e.time));
  }
  s.resize(FreeListPayloadBytes(slots), '\0');
  return s;
}

Result<std::vector<FreedExtent>> DecodeFreeList(std::string_view payload, uint64_t file_end,
                                                uint8_t version, uint64_t next_generation) {
  if (version != 1 && version != 2) return Err(Status::Corruption("free list: unknown version"));
  const size_t entry = version == 1 ? kEntryBytesV1 : kEntryBytesV2;
  Reader r(payload);
  uint64_t n;
  if (!r.U64(&n) || n > r.remaining() / entry) return Err(Status::Corruption("free list: bad count"));
  std::vector<FreedExtent> out;
  uint64_t prev_end = kDataStart;
  for (uint64_t i = 0; i < n; ++i) {
    FreedExtent e;
    uint64_t time = 0;
    if (!r.U64(&e.addr) || !r.U64(&e.len)) return Err(Status::Corruption("free list is truncated"));
    if (version == 2 && (!r.U64(&e.generation) || !r.U64(&time))) {
      return Err(Status::Corruption("free list is truncated"));
    }
    e.time = static_cast<int64_t>(time);
    if (e.len == 0) continue;
    if (e.addr < prev_end || e.addr > file_end || file_end - e.addr < e.len)
      return Err(Status::Corruption("free list: extent out of order or out of bounds"));
    if (e.generation >= next_generation || e.time < 0)
      return Err(Status::Corruption("free list: an extent freed by a later commit"));
    prev_end = e.addr + e.len;
    out.push_back(e);
  }
  if (!r.done()) return Err(Status::Corruption("free list: trailing bytes"));
  return out;
}

}  // namespace slabfs::engine
