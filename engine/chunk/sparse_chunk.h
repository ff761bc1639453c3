// Sparse chunks: the elements of a chunk that are defined (written and not
// erased), and their values.
//
// Memory chunk of n elements (what the cache holds):
//   n values, C order; an undefined element holds the fill value, so reading
//   the values as a dense chunk gives the right answer;
//   then the defined set, ceil(n/64) u64 words: bit i%64 of word i/64 is
//   element i.
//
// Encoded chunk (before the dataset's filter pipeline):
//   u8 layout: 1 = runs, 2 = bitmap (whichever is smaller)
//   runs:   varint r (number of runs), then r x (varint gap, varint length):
//           gap = elements from the end of the previous run (from 0 for the
//           first), length >= 1; every run after the first has gap >= 1
//   bitmap: ceil(n/8) bytes, bit i%8 of byte i/8 = element i; bits past n 0
//   then the values of the defined elements, in order, item size each.
// A chunk with no defined element is never stored.
#ifndef SLABFS_ENGINE_CHUNK_SPARSE_CHUNK_H_
#define SLABFS_ENGINE_CHUNK_SPARSE_CHUNK_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "slabfs/status.h"

namespace slabfs::engine {

// A sparse memory chunk is the n values, padded to 8 bytes, then the
// defined set as a bitmap of 64-bit words (aligned: the buffers come from
// new[], and the values' size need not be a multiple of 8).
inline uint64_t SparseBitmapWords(uint64_t n) { return (n + 63) / 64; }
inline uint64_t SparseValueBytes(uint64_t n, size_t item_size) { return (n * item_size + 7) & ~uint64_t{7}; }
inline uint64_t SparseMemBytes(uint64_t n, size_t item_size) {
  return SparseValueBytes(n, item_size) + SparseBitmapWords(n) * 8;
}

// The defined set of a sparse memory chunk.
inline uint64_t* SparseBits(char* mem, uint64_t n, size_t item_size) {
  return reinterpret_cast<uint64_t*>(mem + SparseValueBytes(n, item_size));
}
inline const uint64_t* SparseBits(const char* mem, uint64_t n, size_t item_size) {
  return reinterpret_cast<const uint64_t*>(mem + SparseValueBytes(n, item_size));
}

// Sets (or clears) bits [first, first + count); returns how many changed.
uint64_t SetBitRange(uint64_t* bits, uint64_t first, uint64_t count, bool value);
uint64_t CountBits(const uint64_t* bits, uint64_t n);
// Calls f(start, length) for each maximal run of set bits in [first, end).
template <typename F>
void ForEachSetRun(const uint64_t* bits, uint64_t first, uint64_t end, F&& f);

// The most bytes EncodeSparse can produce for n elements.
uint64_t MaxEncodedSparseBytes(uint64_t n, size_t item_size);
// Encodes a memory chunk (with at least one defined element).
void EncodeSparse(const char* mem, uint64_t n, size_t item_size, std::string* out);
// Decodes only the defined set (the encoding without its values) into the
// bitmap `bits` of a chunk of n elements, checked as DecodeSparse does.
Status DecodeSparseSet(std::string_view structure, uint64_t n, uint64_t defined, uint64_t* bits);
// Decodes into a memory chunk of n elements; `fill` is one element. Every
// count, run and length is checked: Corruption for anything that does not
// describe exactly `defined` elements (1 to n) of a chunk of n.
Status DecodeSparse(std::string_view enc, uint64_t n, size_t item_size, std::string_view fill, uint64_t defined,
                    char* mem);

// ------------------------------------------------------------------ inline

template <typename F>
void ForEachSetRun(const uint64_t* bits, uint64_t first, uint64_t end, F&& f) {
  uint64_t i = first;
  while (i < end) {
    // Skip clear bits, a word at a time where possible.
    uint64_t w = bits[i / 64] >> (i % 64);
    if (w == 0) {
      i = (i / 64 + 1) * 64;
      continue;
    }
    i += static_cast<uint64_t>(__builtin_ctzll(w));
    if (i >= end) break;
    const uint64_t start = i;
    // Extend over set bits.
    for (;;) {
      uint64_t v = ~bits[i / 64] >> (i % 64);
      if (v == 0) {
        i = (i / 64 + 1) * 64;
        if (i >= end) break;
        continue;
      }
      i += static_cast<uint64_t>(__builtin_ctzll(v));
      break;
    }
    if (i > end) i = end;
    f(start, i - start);
  }
}

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_CHUNK_SPARSE_CHUNK_H_
