// Which committed state a container opens at: the valid superblock of the
// highest generation whose commit reached the disk whole.
//
// A commit made with one fdatasync (a version 2 superblock, with a commit
// record: engine/format/superblock.h) may have lost some of its writes to a
// power failure while its superblock survived. Such a superblock is taken
// only once every extent its record lists reads back with its checksum;
// otherwise the other slot, the commit before it (made durable before this
// one began), is the newest state. Every open, fsck and a reader moving to
// a newer commit choose here.
//
// A reader in another process may check a record while the writer commits
// on and reuses the space it lists (nobody registered that commit yet).
// Every such reuse comes after a commit that wrote a slot, so a check that
// fails counts only while both slots still hold what was read; otherwise
// the choice starts over.
#ifndef SLABFS_ENGINE_TXN_NEWEST_STATE_H_
#define SLABFS_ENGINE_TXN_NEWEST_STATE_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "engine/format/superblock.h"
#include "engine/io/file.h"
#include "slabfs/status.h"

namespace slabfs::engine {

struct NewestState {
  Superblock sb;
  // Why each slot was not the one taken: "" for the slot taken (or a valid
  // older one), else the decoder's message, or why its commit is incomplete.
  std::array<std::string, 2> slot_errors;
  // A newer superblock whose commit did not reach the disk whole (a power
  // failure during a single-flush commit): harmless, the state above is
  // the last complete commit.
  std::optional<uint64_t> incomplete_generation;
};

// A commit record already checked by this process (a reader that polls for
// new commits checks each one once).
struct CheckedCommit {
  uint64_t generation = 0;
  std::vector<WrittenExtent> written;
};

// NotSupported when neither slot has the superblock magic ("<name> is not a
// slabfs container") or a slot's version is newer than this build reads;
// Corruption ("no valid superblock (slot 0: ...; slot 1: ...)") when no
// slot holds a valid, complete commit; the file's own error when reading
// it fails (never taken as an incomplete commit); Busy when every one of
// 100 choices met new commits.
// `checked` (optional) skips reading back a record it holds, and is set to
// the record checked.
Result<NewestState> FindNewestState(File* file, CheckedCommit* checked = nullptr);

// Whether every extent of `sb`'s commit record reads back with its
// checksum: Corruption naming the first that does not (or lies past the
// end of the file).
Status CheckCommitComplete(File* file, const Superblock& sb);

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_TXN_NEWEST_STATE_H_
