#include "engine/txn/block_store.h"

#include <cstdlib>
#include <string>

#include "engine/format/layout.h"
#include "engine/util/expensive_checks.h"
#include "engine/util/lock_order.h"
#include "engine/util/log.h"

namespace slabfs::engine {
namespace {

// The lock order (engine/util/lock_order.h): no block I/O under a lock whose
// rank forbids it. A block read or written
// there would hold every thread that wants the lock for as long as the
// disk takes; with the expensive checks on (engine/util/expensive_checks.h:
// the sanitizer builds, and the tests) the program stops at once, else it
// says so in the log.
void CheckNoBlockIoLock(std::string_view what) {
  if (NoBlockIoLocksHeld() == 0) [[likely]]
    return;
  LogWarn("block I/O under a lock that forbids it (" + std::string(what) +
          "): the lock order in engine/util/lock_order.h forbids it");
  if (ExpensiveChecks()) std::abort();
}

}  // namespace

Result<std::string> BlockStore::ReadImage(const BlockRef& ref, std::string_view what) {
  CheckNoBlockIoLock(what);
  SLABFS_RETURN_IF_ERROR_R(CheckBlockRef(ref, alloc_->file_end(), what));
  if (ref.empty()) return Err(Status::Corruption(std::string(what) + ": missing block"));
  std::string image(ref.len, '\0');
  SLABFS_RETURN_IF_ERROR_R(file_->ReadAt(ref.addr, image.data(), image.size()));
  return image;
}

Result<std::string> BlockStore::Read(const BlockRef& ref, BlockType type, std::string_view what, uint8_t* version) {
  SLABFS_ASSIGN_OR_RETURN(std::string image, ReadImage(ref, what));
  SLABFS_ASSIGN_OR_RETURN(std::string_view payload, DecodeBlock(image, type, what, version));
  return std::string(payload);
}

Result<std::string> BlockStore::Read(const BlockRef& ref, BlockType type, BlockType other, std::string_view what,
                                     BlockType* got) {
  SLABFS_ASSIGN_OR_RETURN(std::string image, ReadImage(ref, what));
  *got = static_cast<uint8_t>(image[4]) == static_cast<uint8_t>(other) ? other : type;
  SLABFS_ASSIGN_OR_RETURN(std::string_view payload, DecodeBlock(image, *got, what));
  return std::string(payload);
}

Result<BlockType> BlockStore::TypeOf(const BlockRef& ref, std::string_view what) {
  CheckNoBlockIoLock(what);
  SLABFS_RETURN_IF_ERROR_R(CheckBlockRef(ref, alloc_->file_end(), what));
  if (ref.empty()) return Err(Status::Corruption(std::string(what) + ": missing block"));
  char header[8];
  SLABFS_RETURN_IF_ERROR_R(file_->ReadAt(ref.addr, header, sizeof header));
  return static_cast<BlockType>(static_cast<uint8_t>(header[4]));
}

Result<BlockRef> BlockStore::Write(BlockType type, std::string_view payload, uint8_t version) {
  CheckNoBlockIoLock(BlockTypeName(type));
  std::string image = EncodeBlock(type, payload, version);
  if (image.size() > kMaxBlockBytes)
    return Err(Status::NotSupported(std::string(BlockTypeName(type)) + " block would exceed " +
                                    std::to_string(kMaxBlockBytes >> 20) + " MiB"));
  BlockRef ref{alloc_->Allocate(image.size(), Allocator::kPackedAlign), static_cast<uint32_t>(image.size())};
  Status s = file_->WriteAt(ref.addr, image.data(), image.size());
  if (!s.ok()) {
    alloc_->Free(ref.addr, ref.len);
    return Err(s);
  }
  return ref;
}

void BlockStore::Free(const BlockRef& ref) {
  if (!ref.empty()) alloc_->Free(ref.addr, ref.len);
}

}  // namespace slabfs::engine
