#include "engine/format/superblock.h"

#include <cstring>

#include "engine/format/layout.h"
#include "engine/util/coding.h"
#include "engine/util/crc32c.h"

namespace slabfs::engine {
namespace {

// Where version 2 keeps its commit record's count and checksum.
constexpr size_t kRecordCountAt = 72;
constexpr size_t kReservedFrom = 80;

std::string EncodeRecord(const std::vector<WrittenExtent>& written) {
  std::string r;
  for (const WrittenExtent& w : written) {
    PutU64(&r, w.addr);
    PutU32(&r, w.len);
    PutU32(&r, w.crc);
  }
  return r;
}

Status CheckRecord(const Superblock& sb) {
  if (sb.written.size() > kMaxWrittenExtents) return Status::Corruption("commit record lists too many extents");
  uint64_t total = 0, prev_end = kDataStart;
  for (const WrittenExtent& w : sb.written) {
    if (w.len == 0 || w.addr < prev_end || w.addr > sb.file_end || sb.file_end - w.addr < w.len)
      return Status::Corruption("commit record extent out of order or out of bounds");
    prev_end = w.addr + w.len;
    total += w.len;
  }
  if (total > kMaxWrittenBytes) return Status::Corruption("commit record lists too many bytes");
  return Status::OK();
}

}  // namespace

std::string EncodeSuperblock(const Superblock& sb) {
  const bool record = !sb.written.empty();
  const std::string rec = EncodeRecord(sb.written);
  std::string s(kSuperblockMagic, 8);
  PutU32(&s, record ? 2 : 1);
  PutU32(&s, kSuperblockBytes);
  PutU64(&s, sb.generation);
  PutU64(&s, sb.root.addr);
  PutU32(&s, sb.root.len);
  PutU32(&s, 0);
  PutU64(&s, sb.free_list.addr);
  PutU32(&s, sb.free_list.len);
  PutU32(&s, 0);
  PutU64(&s, sb.file_end);
  PutU64(&s, sb.next_object_id);
  if (record) {
    PutU32(&s, static_cast<uint32_t>(sb.written.size()));
    PutU32(&s, Crc32c(rec.data(), rec.size()));
  }
  s.resize(kSuperblockBytes - 4, '\0');
  PutU32(&s, Crc32c(s.data(), s.size()));
  return s + rec;
}

bool HasSuperblockMagic(std::string_view bytes) {
  return bytes.size() >= 8 && std::memcmp(bytes.data(), kSuperblockMagic, 8) == 0;
}

Result<Superblock> DecodeSuperblock(std::string_view bytes) {
  if (bytes.size() < kSuperblockBytes) return Err(Status::Corruption("superblock is truncated"));
  if (!HasSuperblockMagic(bytes)) return Err(Status::Corruption("bad superblock magic"));
  uint32_t stored_crc = LoadU32(bytes.data() + kSuperblockBytes - 4);
  if (!ChecksumMatches(stored_crc, Crc32c(bytes.data(), kSuperblockBytes - 4)))
    return Err(Status::Corruption("superblock checksum mismatch"));
  Reader r(bytes.substr(8, kSuperblockBytes - 12));
  uint32_t version, length, pad1, pad2;
  Superblock sb;
  if (!r.U32(&version) || !r.U32(&length) || !r.U64(&sb.generation) || !r.U64(&sb.root.addr) || !r.U32(&sb.root.len) ||
      !r.U32(&pad1) || !r.U64(&sb.free_list.addr) || !r.U32(&sb.free_list.len) || !r.U32(&pad2) ||
      !r.U64(&sb.file_end) || !r.U64(&sb.next_object_id))
    return Err(Status::Corruption("superblock is truncated"));
  if (version == 0 || version > kFormatVersion)
    return Err(Status::NotSupported("container format version " + std::to_string(version) +
                                    " (this slabfs reads versions 1 to " + std::to_string(kFormatVersion) + ")"));
  if (pad1 != 0 || pad2 != 0) return Err(Status::Corruption("superblock reserved fields are not zero"));
  const size_t reserved_from = version >= 2 ? kReservedFrom : kRecordCountAt;
  for (size_t i = reserved_from; i < kSuperblockBytes - 4; ++i)
    if (bytes[i] != 0) return Err(Status::Corruption("superblock reserved bytes are not zero"));
  if (length != kSuperblockBytes) return Err(Status::Corruption("bad superblock length"));
  if (sb.generation == 0) return Err(Status::Corruption("superblock generation 0"));
  if (sb.file_end < kDataStart) return Err(Status::Corruption("superblock file end before data start"));
  SLABFS_RETURN_IF_ERROR_R(CheckBlockRef(sb.root, sb.file_end, "root"));
  SLABFS_RETURN_IF_ERROR_R(CheckBlockRef(sb.free_list, sb.file_end, "free list"));
  if (sb.next_object_id <= 1) return Err(Status::Corruption("bad next object id"));
  if (version >= 2) {
    const uint32_t count = LoadU32(bytes.data() + kRecordCountAt);
    const uint32_t record_crc = LoadU32(bytes.data() + kRecordCountAt + 4);
    if (count == 0 || count > kMaxWrittenExtents)
      return Err(Status::Corruption("commit record lists " + std::to_string(count) + " extents"));
    const size_t record_bytes = size_t{count} * kWrittenExtentBytes;
    if (bytes.size() - kSuperblockBytes < record_bytes) return Err(Status::Corruption("commit record is truncated"));
    std::string_view rec = bytes.substr(kSuperblockBytes, record_bytes);
    if (!ChecksumMatches(record_crc, Crc32c(rec.data(), rec.size())))
      return Err(Status::Corruption("commit record checksum mismatch"));
    Reader rr(rec);
    sb.written.resize(count);
    for (WrittenExtent& w : sb.written)
      if (!rr.U64(&w.addr) || !rr.U32(&w.len) || !rr.U32(&w.crc))
        return Err(Status::Corruption("commit record is truncated"));
    SLABFS_RETURN_IF_ERROR_R(CheckRecord(sb));
  }
  return sb;
}

}  // namespace slabfs::engine
