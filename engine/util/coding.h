// Little-endian fixed-width encoding, and a bounds-checked reader for bytes
// that came from disk (untrusted: every read says whether it fit).
#ifndef SLABFS_ENGINE_UTIL_CODING_H_
#define SLABFS_ENGINE_UTIL_CODING_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace slabfs::engine {

inline void PutU8(std::string* dst, uint8_t v) { dst->push_back(static_cast<char>(v)); }
inline void PutU16(std::string* dst, uint16_t v) {
  char b[2] = {static_cast<char>(v), static_cast<char>(v >> 8)};
  dst->append(b, 2);
}
inline void PutU32(std::string* dst, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>(v >> (8 * i));
  dst->append(b, 4);
}
inline void PutU64(std::string* dst, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));
  dst->append(b, 8);
}
// u16 length then the bytes; the caller guarantees s.size() < 65536.
inline void PutShortString(std::string* dst, std::string_view s) {
  PutU16(dst, static_cast<uint16_t>(s.size()));
  dst->append(s);
}
inline void PutLongString(std::string* dst, std::string_view s) {
  PutU32(dst, static_cast<uint32_t>(s.size()));
  dst->append(s);
}

inline uint32_t LoadU32(const void* p) {
  const auto* b = static_cast<const unsigned char*>(p);
  return uint32_t{b[0]} | (uint32_t{b[1]} << 8) | (uint32_t{b[2]} << 16) | (uint32_t{b[3]} << 24);
}
inline uint64_t LoadU64(const void* p) {
  const auto* b = static_cast<const unsigned char*>(p);
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b[i];
  return v;
}
inline void StoreU32(void* p, uint32_t v) {
  auto* b = static_cast<unsigned char*>(p);
  for (int i = 0; i < 4; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline void StoreU64(void* p, uint64_t v) {
  auto* b = static_cast<unsigned char*>(p);
  for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
}

// Reads fields from an untrusted byte string. Every getter returns false
// (and leaves the reader failed) when the bytes run out; callers turn that
// into Corruption.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}

  bool U8(uint8_t* v) {
    if (!Need(1)) return false;
    *v = static_cast<uint8_t>(data_[pos_]);
    pos_ += 1;
    return true;
  }
  bool U16(uint16_t* v) {
    if (!Need(2)) return false;
    const auto* b = reinterpret_cast<const unsigned char*>(data_.data() + pos_);
    *v = static_cast<uint16_t>(b[0] | (b[1] << 8));
    pos_ += 2;
    return true;
  }
  bool U32(uint32_t* v) {
    if (!Need(4)) return false;
    *v = LoadU32(data_.data() + pos_);
    pos_ += 4;
    return true;
  }
  bool U64(uint64_t* v) {
    if (!Need(8)) return false;
    *v = LoadU64(data_.data() + pos_);
    pos_ += 8;
    return true;
  }
  bool Bytes(size_t n, std::string_view* v) {
    if (!Need(n)) return false;
    *v = data_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool ShortString(std::string_view* v) {
    uint16_t n;
    return U16(&n) && Bytes(n, v);
  }
  bool LongString(std::string_view* v, size_t max) {
    uint32_t n;
    if (!U32(&n) || n > max) return fail();
    return Bytes(n, v);
  }

  size_t remaining() const { return failed_ ? 0 : data_.size() - pos_; }
  bool done() const { return !failed_ && pos_ == data_.size(); }
  bool failed() const { return failed_; }

 private:
  bool fail() {
    failed_ = true;
    return false;
  }
  bool Need(size_t n) {
    if (failed_ || data_.size() - pos_ < n) return fail();
    return true;
  }
  std::string_view data_;
  size_t pos_ = 0;
  bool failed_ = false;
};

// LEB128: 7 bits a byte, low bits first.
inline void PutVarint(std::string* dst, uint64_t v) {
  while (v >= 0x80) {
    dst->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  dst->push_back(static_cast<char>(v));
}

// At most 10 bytes, and the 10th may only carry bit 63: anything longer or
// larger does not fit a u64 and is refused rather than truncated.
inline bool GetVarint(Reader* r, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    uint8_t b;
    if (!r->U8(&b)) return false;
    if (shift == 63 && b > 1) return false;
    result |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_UTIL_CODING_H_
