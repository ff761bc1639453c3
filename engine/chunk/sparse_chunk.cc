#include "engine/chunk/sparse_chunk.h"

#include <algorithm>
#include <cstring>

#include "engine/util/coding.h"

namespace slabfs::engine {
namespace {

constexpr uint8_t kLayoutRuns = 1;
constexpr uint8_t kLayoutBitmap = 2;

size_t VarintBytes(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

}  // namespace

uint64_t SetBitRange(uint64_t* bits, uint64_t first, uint64_t count, bool value) {
  uint64_t changed = 0;
  while (count > 0) {
    const uint64_t word = first / 64, bit = first % 64;
    const uint64_t take = std::min<uint64_t>(64 - bit, count);
    const uint64_t m = (take == 64 ? ~0ull : ((1ull << take) - 1)) << bit;
    const uint64_t before = bits[word];
    bits[word] = value ? before | m : before & ~m;
    changed += static_cast<uint64_t>(__builtin_popcountll(before ^ bits[word]));
    first += take;
    count -= take;
  }
  return changed;
}

uint64_t CountBits(const uint64_t* bits, uint64_t n) {
  uint64_t c = 0;
  for (uint64_t w = 0; w < n / 64; ++w) c += static_cast<uint64_t>(__builtin_popcountll(bits[w]));
  if (n % 64) c += static_cast<uint64_t>(__builtin_popcountll(bits[n / 64] & ((1ull << (n % 64)) - 1)));
  return c;
}

uint64_t MaxEncodedSparseBytes(uint64_t n, size_t item_size) {
  // The bitmap layout bounds the structure (runs are used only when
  // smaller), plus every value.
  return 1 + (n + 7) / 8 + n * item_size;
}

void EncodeSparse(const char* mem, uint64_t n, size_t item_size, std::string* out) {
  const uint64_t* bits = SparseBits(mem, n, item_size);
  uint64_t runs = 0, run_bytes = 0, prev_end = 0, defined = 0;
  ForEachSetRun(bits, 0, n, [&](uint64_t start, uint64_t len) {
    ++runs;
    run_bytes += VarintBytes(start - prev_end) + VarintBytes(len);
    prev_end = start + len;
    defined += len;
  });
  const uint64_t bitmap_bytes = (n + 7) / 8;
  out->clear();
  out->reserve(1 + std::min(run_bytes + VarintBytes(runs), bitmap_bytes) + defined * item_size);
  if (run_bytes + VarintBytes(runs) < bitmap_bytes) {
    PutU8(out, kLayoutRuns);
    PutVarint(out, runs);
    prev_end = 0;
    ForEachSetRun(bits, 0, n, [&](uint64_t start, uint64_t len) {
      PutVarint(out, start - prev_end);
      PutVarint(out, len);
      prev_end = start + len;
    });
  } else {
    PutU8(out, kLayoutBitmap);
    const size_t at = out->size();
    out->resize(at + bitmap_bytes);
    for (uint64_t b = 0; b < bitmap_bytes; ++b) (*out)[at + b] = static_cast<char>(bits[b / 8] >> (8 * (b % 8)) & 0xff);
  }
  ForEachSetRun(bits, 0, n,
                [&](uint64_t start, uint64_t len) { out->append(mem + start * item_size, len * item_size); });
}

Status DecodeSparseSet(std::string_view structure, uint64_t n, uint64_t defined, uint64_t* bits) {
  auto bad = [](std::string_view why) { return Status::Corruption("sparse chunk: " + std::string(why)); };
  if (defined == 0 || defined > n) return bad("claims " + std::to_string(defined) + " defined elements");
  Reader r(structure);
  uint8_t layout;
  if (!r.U8(&layout)) return bad("no layout");
  std::memset(bits, 0, SparseBitmapWords(n) * 8);
  if (layout == kLayoutRuns) {
    uint64_t runs, pos = 0, total = 0;
    if (!GetVarint(&r, &runs) || runs == 0 || runs > defined) return bad("bad run count");
    for (uint64_t k = 0; k < runs; ++k) {
      uint64_t gap, len;
      if (!GetVarint(&r, &gap) || !GetVarint(&r, &len)) return bad("runs are truncated");
      if (len == 0 || (k > 0 && gap == 0)) return bad("empty or touching runs");
      if (gap > n - pos || len > n - pos - gap) return bad("a run reaches past the chunk");
      pos += gap;
      SetBitRange(bits, pos, len, true);
      pos += len;
      total += len;
    }
    if (total != defined)
      return bad("runs cover " + std::to_string(total) + " elements, not " + std::to_string(defined));
  } else if (layout == kLayoutBitmap) {
    std::string_view map;
    if (!r.Bytes((n + 7) / 8, &map)) return bad("bitmap is truncated");
    for (uint64_t b = 0; b < map.size(); ++b)
      bits[b / 8] |= static_cast<uint64_t>(static_cast<unsigned char>(map[b])) << (8 * (b % 8));
    if (n % 64 && (bits[n / 64] >> (n % 64)) != 0) return bad("bits set past the chunk");
    if (CountBits(bits, n) != defined) return bad("bitmap does not hold the defined count");
  } else {
    return bad("unknown layout " + std::to_string(layout));
  }
  if (!r.done()) return bad("bytes between the structure and the values");
  return Status::OK();
}

Status DecodeSparse(std::string_view enc, uint64_t n, size_t item_size, std::string_view fill, uint64_t defined,
                    char* mem) {
  if (defined == 0 || defined > n)
    return Status::Corruption("sparse chunk: claims " + std::to_string(defined) + " defined elements");
  // The values take the end of the encoding: the structure is what is left.
  if (enc.size() < 1 + defined * item_size) return Status::Corruption("sparse chunk: too short for its values");
  const char* values = enc.data() + enc.size() - defined * item_size;
  uint64_t* bits = SparseBits(mem, n, item_size);
  SLABFS_RETURN_IF_ERROR(DecodeSparseSet(enc.substr(0, enc.size() - defined * item_size), n, defined, bits));
  // Values go to the defined elements, the fill value everywhere else.
  uint64_t next = 0, v = 0;
  const bool zero_fill = std::all_of(fill.begin(), fill.end(), [](char ch) { return ch == 0; });
  auto fill_range = [&](uint64_t from, uint64_t to) {
    if (from >= to) return;
    char* dst = mem + from * item_size;
    const uint64_t total = (to - from) * item_size;
    if (zero_fill) {
      std::memset(dst, 0, total);
      return;
    }
    // One element, then doubling copies of what is already there.
    std::memcpy(dst, fill.data(), item_size);
    for (uint64_t done = item_size; done < total;) {
      const uint64_t k = std::min(done, total - done);
      std::memcpy(dst + done, dst, k);
      done += k;
    }
  };
  ForEachSetRun(bits, 0, n, [&](uint64_t start, uint64_t len) {
    fill_range(next, start);
    std::memcpy(mem + start * item_size, values + v * item_size, len * item_size);
    v += len;
    next = start + len;
  });
  fill_range(next, n);
  return Status::OK();
}

}  // namespace slabfs::engine
