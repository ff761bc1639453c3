// The container's single writer: an exclusive OFD lock on one byte
// (kWriterLockByte; read-only opens lock other bytes, see
// engine/txn/reader_table.h),
// and a lock record (at kLockRecordOffset) that names the holder: program,
// pid, host, since when, and, for a slabfs daemon, the mount point it
// serves.
//
// Unmounting a daemon returns (fusermount3 -u, umount) as soon as the
// kernel has let go of the mount point; the daemon then makes its last
// commit and releases the lock. A writer or reader that opens the
// container in that moment would find it locked, or read the commit before
// the last one. So an open that finds the lock held by a slabfs daemon on
// this host whose mount point is no longer mounted waits for it to let go
// (bounded): after the unmount returns, the next `slab` sees every change
// made through the mount.
#ifndef SLABFS_ENGINE_IO_WRITER_LOCK_H_
#define SLABFS_ENGINE_IO_WRITER_LOCK_H_

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "engine/io/file.h"
#include "slabfs/status.h"

namespace slabfs::engine {

struct LockRecord {
  std::string pid, host, program, since;
  std::string mount;  // the mount point a daemon serves; empty for others
  std::string mntns;  // its mount namespace ("mnt:[4026531840]")
};

// How long an open waits for an unmounting daemon to let go.
inline constexpr std::chrono::milliseconds kUnmountWait{60000};

// The record of this process, as `program` serving `mount` (or none).
LockRecord OwnLockRecord(std::string_view program, std::string_view mount);
// kLockRecordBytes bytes; fields too long are cut.
std::string EncodeLockRecord(const LockRecord& r);
// nullopt for anything but a record (zeros, garbage: the bytes are untrusted).
std::optional<LockRecord> DecodeLockRecord(std::string_view bytes);
// "slabfs (pid 12, on host, since ...)" for messages.
std::string DescribeHolder(const std::optional<LockRecord>& r);

// Whether `r` names a slabfs daemon on this host, still running, in this
// process's mount namespace, whose mount point is no longer mounted there
// (/proc/self/mountinfo).
bool HolderIsUnmounting(const LockRecord& r);
// Whether `path` is a mount point in /proc/self/mountinfo.
bool IsMountPoint(std::string_view path);

// Whether another open file holds the writer's lock.
Result<bool> WriterPresent(File* file);

// Takes the lock for writing, waiting up to `wait` while the holder is an
// unmounting daemon. Busy naming the holder when someone else has it.
Status AcquireWriterLock(File* file, std::chrono::milliseconds wait = kUnmountWait);
// For a read-only open: waits up to `wait` while an unmounting daemon holds
// the lock, so that the reader sees its last commit.
void WaitForUnmountingWriter(File* file, std::chrono::milliseconds wait = kUnmountWait);

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_IO_WRITER_LOCK_H_
