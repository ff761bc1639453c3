#include "engine/format/block.h"

#include "engine/format/layout.h"
#include "engine/util/coding.h"
#include "engine/util/crc32c.h"

namespace slabfs::engine {

std::string_view BlockTypeName(BlockType t) {
  switch (t) {
    case BlockType::kGroup: return "group";
    case BlockType::kDataset: return "dataset";
    case BlockType::kFixedArrayLeaf: return "fixed-array leaf";
    case BlockType::kFixedArrayNode: return "fixed-array node";
    case BlockType::kFreeList: return "free list";
    case BlockType::kPagedLeaf: return "paged-array leaf";
    case BlockType::kPagedNode: return "paged-array node";
    case BlockType::kBTreeLeaf: return "b-tree leaf";
    case BlockType::kBTreeNode: return "b-tree node";
    case BlockType::kFreeListDelta: return "free-list delta";
    case BlockType::kGroupPage: return "group page";
    case BlockType::kGroupPageTable: return "group page table";
  }
  return "unknown";
}

uint8_t MaxBlockVersion(BlockType type) {
  if (type == BlockType::kGroup) return 3;
  return type == BlockType::kFreeList || type == BlockType::kDataset ? 2 : 1;
}

std::string EncodeBlock(BlockType type, std::string_view payload, uint8_t version) {
  std::string s;
  s.reserve(kBlockHeaderBytes + payload.size());
  PutU32(&s, kBlockMagic);
  PutU8(&s, static_cast<uint8_t>(type));
  PutU8(&s, version);
  PutU16(&s, 0);
  PutU32(&s, static_cast<uint32_t>(payload.size()));
  uint32_t crc = Crc32c(s.data(), 12);
  crc = Crc32c(crc, payload.data(), payload.size());
  PutU32(&s, crc);
  s.append(payload);
  return s;
}

Result<std::string_view> DecodeBlock(std::string_view image, BlockType type, std::string_view what, uint8_t* version) {
  auto bad = [&](std::string_view why) {
    return Err(Status::Corruption(std::string(what) + " (" + std::string(BlockTypeName(type)) +
                                  " block): " + std::string(why)));
  };
  if (image.size() < kBlockHeaderBytes) return bad("truncated header");
  if (LoadU32(image.data()) != kBlockMagic) return bad("bad magic");
  if (static_cast<uint8_t>(image[4]) != static_cast<uint8_t>(type)) return bad("wrong block type");
  const uint8_t v = static_cast<uint8_t>(image[5]);
  if (v < 1 || v > MaxBlockVersion(type)) return bad("unknown block version");
  if (image[6] != 0 || image[7] != 0) return bad("reserved header bytes are not zero");
  uint32_t len = LoadU32(image.data() + 8);
  if (len != image.size() - kBlockHeaderBytes) return bad("length mismatch");
  uint32_t crc = Crc32c(image.data(), 12);
  crc = Crc32c(crc, image.data() + kBlockHeaderBytes, len);
  if (!ChecksumMatches(LoadU32(image.data() + 12), crc)) return bad("checksum mismatch");
  if (version) *version = v;
  return image.substr(kBlockHeaderBytes);
}

Status CheckBlockRef(const BlockRef& ref, uint64_t file_end, std::string_view what) {
  if (ref.addr == 0 && ref.len == 0) return Status::OK();
  if (ref.addr < kDataStart || ref.len < kBlockHeaderBytes || ref.len > kMaxBlockBytes || ref.addr > file_end ||
      file_end - ref.addr < ref.len)
    return Status::Corruption(std::string(what) + ": block reference out of bounds (addr " + std::to_string(ref.addr) +
                              ", len " + std::to_string(ref.len) + ")");
  return Status::OK();
}

}  // namespace slabfs::engine
