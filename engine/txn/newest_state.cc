#include "engine/txn/newest_state.h"

#include <algorithm>
#include <string_view>

#include "engine/format/layout.h"
#include "engine/util/crc32c.h"

namespace slabfs::engine {

Status CheckCommitComplete(File* file, const Superblock& sb) {
  if (sb.written.empty()) return Status::OK();
  SLABFS_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  std::string buf;
  for (const WrittenExtent& w : sb.written) {
    const std::string where = "the commit of generation " + std::to_string(sb.generation) + " wrote " +
                              std::to_string(w.len) + " bytes at " + std::to_string(w.addr);
    if (w.addr > size || size - w.addr < w.len)
      return Status::Corruption(where + ", past the end of the file: the commit did not reach the disk whole");
    buf.resize(w.len);
    SLABFS_RETURN_IF_ERROR(file->ReadAt(w.addr, buf.data(), w.len));
    if (!ChecksumMatches(w.crc, Crc32c(buf.data(), buf.size())))
      return Status::Corruption(where + ", which do not match its record: the commit did not reach the disk whole");
  }
  return Status::OK();
}

namespace {

// Both superblock slots as the file holds them now (shorter when the file
// is).
Result<std::string> ReadSlots(File* file, uint64_t size) {
  std::string head(std::min<uint64_t>(size, kSuperblockSlot1 + kSuperblockSlotBytes), '\0');
  SLABFS_RETURN_IF_ERROR_R(file->ReadAt(0, head.data(), head.size()));
  return head;
}

// A reader in another process races the writer: while it reads back the
// extents of the newest commit, the writer may commit twice more and reuse
// them (nobody had registered that commit yet). Every such reuse follows a
// commit that wrote a slot, so a check that fails while the slots still
// hold what was read is a commit that did not reach the disk whole; one
// that fails after they changed says nothing, and the choice starts over.
constexpr int kRaceRetries = 100;

// One choice over the slots as first read; *raced when a record check
// failed and the slots had changed meanwhile.
Result<NewestState> ChooseOnce(File* file, CheckedCommit* checked, bool* raced) {
  *raced = false;
  SLABFS_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  const std::string not_container = file->name() + " is not a slabfs container";
  if (size < kSuperblockBytes) return Err(Status::NotSupported(not_container + " (too short)"));
  SLABFS_ASSIGN_OR_RETURN(std::string head, ReadSlots(file, size));
  // Whether the slots changed since `head` was read (any change counts).
  auto slots_changed = [&]() -> Result<bool> {
    SLABFS_ASSIGN_OR_RETURN(uint64_t now_size, file->Size());
    if (now_size < kSuperblockBytes) return true;
    SLABFS_ASSIGN_OR_RETURN(std::string now, ReadSlots(file, now_size));
    return now != head;
  };

  NewestState out;
  std::optional<Superblock> slot_sb[2];
  bool any_magic = false;
  Status not_supported;
  for (int i = 0; i < 2; ++i) {
    const uint64_t slot = i == 0 ? kSuperblockSlot0 : kSuperblockSlot1;
    if (head.size() < slot + kSuperblockBytes) {
      out.slot_errors[i] = "missing (the file is too short)";
      continue;
    }
    std::string_view bytes(head.data() + slot, std::min<uint64_t>(kSuperblockSlotBytes, head.size() - slot));
    any_magic |= HasSuperblockMagic(bytes);
    auto sb = DecodeSuperblock(bytes);
    if (!sb) {
      out.slot_errors[i] = sb.error().message();
      if (HasSuperblockMagic(bytes) && sb.error().code() == Code::kNotSupported) not_supported = sb.error();
      continue;
    }
    slot_sb[i] = std::move(*sb);
  }
  if (!any_magic) return Err(Status::NotSupported(not_container));

  // Newest first; an incomplete commit gives way to the one before it.
  int order[2] = {0, 1};
  if (slot_sb[1] && (!slot_sb[0] || slot_sb[1]->generation > slot_sb[0]->generation)) std::swap(order[0], order[1]);
  for (int i : order) {
    if (!slot_sb[i]) continue;
    const Superblock& sb = *slot_sb[i];
    const bool known = checked && checked->generation == sb.generation && checked->written == sb.written;
    if (!known) {
      Status s = CheckCommitComplete(file, sb);
      if (!s.ok()) {
        // A failed read (the file cut short by a commit after this one)
        // is a race too, when the slots moved.
        SLABFS_ASSIGN_OR_RETURN(bool changed, slots_changed());
        if (changed) {
          *raced = true;
          return Err(s);
        }
      }
      if (s.code() == Code::kCorruption) {
        out.slot_errors[i] = s.message();
        if (!out.incomplete_generation) out.incomplete_generation = sb.generation;
        continue;
      }
      if (!s.ok()) return Err(s);
      if (checked) *checked = {sb.generation, sb.written};
    }
    out.sb = sb;
    return out;
  }
  if (!not_supported.ok()) return Err(not_supported);
  return Err(Status::Corruption("no valid superblock (slot 0: " + out.slot_errors[0] +
                                "; slot 1: " + out.slot_errors[1] + ")"));
}

}  // namespace

Result<NewestState> FindNewestState(File* file, CheckedCommit* checked) {
  for (int tries = 0;; ++tries) {
    bool raced = false;
    auto found = ChooseOnce(file, checked, &raced);
    if (!raced) return found;
    if (tries == kRaceRetries)
      return Err(Status::Busy(file->name() + ": the writer commits faster than a reader can check its commits"));
  }
}

}  // namespace slabfs::engine
