#include "engine/format/free_list.h"

#include "engine/format/layout.h"
#include "engine/util/coding.h"

namespace slabfs::engine {
namespace {

constexpr size_t kEntryBytesV1 = 16;
constexpr size_t kEntryBytesV2 = 32;
constexpr size_t kDeltaHeaderBytes = 24;  // prev addr, prev len, depth, count
constexpr size_t kDeltaEntryBytes = 40;

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

Result<std::vector<FreedExtent>> DecodeFreeList(std::string_view payload, uint64_t file_end, uint8_t version,
                                                uint64_t next_generation) {
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

// ---------------------------------------------------------------- deltas

size_t FreeListDeltaPayloadBytes(size_t slots) { return kDeltaHeaderBytes + kDeltaEntryBytes * slots; }

std::string EncodeFreeListDelta(const FreeListDelta& d, size_t slots) {
  std::string s;
  s.reserve(FreeListDeltaPayloadBytes(slots));
  PutU64(&s, d.prev.addr);
  PutU32(&s, d.prev.len);
  PutU32(&s, d.depth);
  PutU64(&s, slots);
  for (const FreeListChange& c : d.changes) {
    PutU64(&s, c.addr);
    PutU64(&s, c.len);
    PutU64(&s, c.add ? c.generation : 0);
    PutU64(&s, c.add ? static_cast<uint64_t>(c.time) : 0);
    PutU64(&s, c.add ? 1 : 0);
  }
  s.resize(FreeListDeltaPayloadBytes(slots), '\0');
  return s;
}

Result<FreeListDelta> DecodeFreeListDelta(std::string_view payload, uint64_t file_end, uint64_t next_generation) {
  auto bad = [](std::string_view why) { return Err(Status::Corruption("free-list delta: " + std::string(why))); };
  Reader r(payload);
  FreeListDelta d;
  uint64_t n;
  if (!r.U64(&d.prev.addr) || !r.U32(&d.prev.len) || !r.U32(&d.depth)) return bad("truncated header");
  if (d.depth < 1 || d.depth > kMaxFreeListDepth) return bad("bad depth");
  if (d.prev.empty()) return bad("no previous block");
  if (Status s = CheckBlockRef(d.prev, file_end, "free-list delta"); !s.ok()) return Err(s);
  if (!r.U64(&n) || n > r.remaining() / kDeltaEntryBytes) return bad("bad count");
  for (uint64_t i = 0; i < n; ++i) {
    FreeListChange c;
    uint64_t time = 0, op = 0;
    if (!r.U64(&c.addr) || !r.U64(&c.len) || !r.U64(&c.generation) || !r.U64(&time) || !r.U64(&op))
      return bad("truncated");
    if (op > 1) return bad("unknown op");
    c.add = op == 1;
    c.time = static_cast<int64_t>(time);
    if (c.len == 0) continue;
    // Bounds against the file end come after the whole chain is applied:
    // a later commit may have cut the file below an extent added here.
    if (c.addr < kDataStart || c.len > UINT64_MAX - c.addr) return bad("extent out of bounds");
    if (c.add ? (c.generation >= next_generation || c.time < 0) : (c.generation != 0 || c.time != 0))
      return bad("an extent freed by a later commit");
    d.changes.push_back(c);
  }
  if (!r.done()) return bad("trailing bytes");
  return d;
}

FreeExtentSet::FreeExtentSet(const std::vector<FreedExtent>& base) {
  for (const FreedExtent& e : base) by_addr_.emplace_hint(by_addr_.end(), e.addr, e);
}

Status FreeExtentSet::Apply(const FreeListChange& c) {
  if (c.len == 0) return Status::OK();
  const uint64_t end = c.addr + c.len;
  if (c.add) {
    // An extent starting before end and ending after addr overlaps.
    auto next = by_addr_.lower_bound(c.addr);
    if (next != by_addr_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second.len > c.addr)
        return Status::Corruption("free-list delta: an added extent overlaps a free one");
    }
    if (next != by_addr_.end() && next->first < end)
      return Status::Corruption("free-list delta: an added extent overlaps a free one");
    by_addr_.emplace_hint(next, c.addr, FreedExtent{c.addr, c.len, c.generation, c.time});
    return Status::OK();
  }
  // Remove [addr, end): cut every extent it overlaps.
  auto it = by_addr_.upper_bound(c.addr);
  if (it != by_addr_.begin()) --it;
  while (it != by_addr_.end() && it->first < end) {
    FreedExtent e = it->second;
    const uint64_t e_end = e.addr + e.len;
    if (e_end <= c.addr) {
      ++it;
      continue;
    }
    it = by_addr_.erase(it);
    if (e.addr < c.addr) {
      FreedExtent head = e;
      head.len = c.addr - e.addr;
      by_addr_.emplace(head.addr, head);
    }
    if (e_end > end) {
      FreedExtent tail = e;
      tail.addr = end;
      tail.len = e_end - end;
      it = by_addr_.emplace(tail.addr, tail).first;
      break;
    }
  }
  return Status::OK();
}

Status FreeExtentSet::CheckBounds(uint64_t file_end) const {
  if (by_addr_.empty()) return Status::OK();
  const FreedExtent& last = std::prev(by_addr_.end())->second;
  if (by_addr_.begin()->first < kDataStart || last.addr > file_end || file_end - last.addr < last.len)
    return Status::Corruption("free list: extent out of bounds after its deltas");
  return Status::OK();
}

std::vector<FreedExtent> FreeExtentSet::Extents() const {
  std::vector<FreedExtent> out;
  out.reserve(by_addr_.size());
  for (const auto& [addr, e] : by_addr_) {
    FreedExtent* last = out.empty() ? nullptr : &out.back();
    if (last && last->addr + last->len == e.addr && last->generation == e.generation && last->time == e.time) {
      last->len += e.len;
    } else {
      out.push_back(e);
    }
  }
  return out;
}

}  // namespace slabfs::engine
