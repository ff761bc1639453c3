#include "engine/txn/reader_table.h"

#include <algorithm>
#include <string>

#include "engine/format/layout.h"
#include "engine/util/log.h"

namespace slabfs::engine {
namespace {

// Tries to register before giving up on agreeing with a writer that commits
// faster than a reader can look (each try is two superblock reads).
constexpr int kHoldTries = 1000;

}  // namespace

Result<uint64_t> ReaderSlot::HoldNewest(const std::function<Result<uint64_t>()>& newest) {
  SLABFS_ASSIGN_OR_RETURN(uint64_t g, newest());
  for (int i = 0; i < kHoldTries; ++i) {
    if (std::find(held_.begin(), held_.end(), g) != held_.end()) return g;
    Status s = file_->TryLock(kReaderLockBase + g, 1, /*exclusive=*/false);
    // Nothing can be registered: the writer's reuse delay is all there is.
    if (s.code() == Code::kNotSupported) return g;
    // A shared lock meets only an exclusive one, which nobody takes there.
    if (!s.ok()) return Err(s);
    SLABFS_ASSIGN_OR_RETURN(uint64_t again, newest());
    if (again == g) {
      held_.push_back(g);
      return g;
    }
    (void)file_->Unlock(kReaderLockBase + g, 1);
    g = again;
  }
  return Err(Status::Busy(file_->name() + ": the writer commits faster than a reader can register"));
}

void ReaderSlot::Keep(uint64_t g) {
  std::erase_if(held_, [&](uint64_t h) {
    if (h == g) return false;
    Status s = file_->Unlock(kReaderLockBase + h, 1);
    if (!s.ok()) LogWarn("releasing the reader lock of " + file_->name() + ": " + s.ToString());
    return true;
  });
}

Result<uint64_t> OldestReader(File* file, uint64_t below) {
  SLABFS_ASSIGN_OR_RETURN(std::optional<uint64_t> at, file->LowestLockIn(kReaderLockBase, below));
  return at ? *at - kReaderLockBase : UINT64_MAX;
}

}  // namespace slabfs::engine
