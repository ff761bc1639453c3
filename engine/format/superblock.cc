#include "engine/format/superblock.h"

#include <cstring>

#include "engine/format/layout.h"
#include "engine/util/coding.h"
#include "engine/util/crc32c.h"

namespace slabfs::engine {

std::string EncodeSuperblock(const Superblock& sb) {
  std::string s(kSuperblockMagic, 8);
  PutU32(&s, kFormatVersion);
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
  s.resize(kSuperblockBytes - 4, '\0');
  PutU32(&s, Crc32c(s.data(), s.size()));
  return s;
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
  if (pad1 != 0 || pad2 != 0) return Err(Status::Corruption("superblock reserved fields are not zero"));
  for (size_t i = 72; i < kSuperblockBytes - 4; ++i)
    if (bytes[i] != 0) return Err(Status::Corruption("superblock reserved bytes are not zero"));
  if (version != kFormatVersion)
    return Err(Status::NotSupported("container format version " + std::to_string(version) +
                                    " (this slabfs reads version " + std::to_string(kFormatVersion) + ")"));
  if (length != kSuperblockBytes) return Err(Status::Corruption("bad superblock length"));
  if (sb.generation == 0) return Err(Status::Corruption("superblock generation 0"));
  if (sb.file_end < kDataStart) return Err(Status::Corruption("superblock file end before data start"));
  SLABFS_RETURN_IF_ERROR_R(CheckBlockRef(sb.root, sb.file_end, "root"));
  SLABFS_RETURN_IF_ERROR_R(CheckBlockRef(sb.free_list, sb.file_end, "free list"));
  if (sb.next_object_id <= 1) return Err(Status::Corruption("bad next object id"));
  return sb;
}

}  // namespace slabfs::engine
