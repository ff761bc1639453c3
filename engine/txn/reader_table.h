// Readers that follow a writer: which committed states read-only opens
// are still reading, so that the writer never reuses their space.
//
// The table is the kernel's lock table (LMDB keeps a reader table in a lock
// file; byte-range locks on the container itself need no second file, work
// for readers that may not write the directory, and vanish with a process
// that dies): a read-only open reading the state of generation g holds a
// shared OFD lock on byte kReaderLockBase + g of the container. The writer
// asks for the lowest such lock below the current generation: extents that
// the commit of generation f stopped referencing may be reused once no
// reader holds a generation below f (Allocator::Release).
//
// Registering races a writer's commit, so a reader takes its lock, then
// reads the superblocks again, and keeps the generation only if it is still
// the newest: the writer looks at the locks only after its next superblock
// is written, so a reader whose lock it missed sees that superblock and
// moves on to it (ReaderSlot::HoldNewest).
//
// Where the filesystem keeps locks only per host (FUSE filesystems such as
// sshfs, NFS mounted with `nolock`, SMB), readers on other hosts are
// invisible: there the writer also waits a reuse delay after each commit
// (OpenOptions::reuse_delay_seconds), and a reader on another host must
// refresh within that delay.
#ifndef SLABFS_ENGINE_TXN_READER_TABLE_H_
#define SLABFS_ENGINE_TXN_READER_TABLE_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/io/file.h"
#include "slabfs/status.h"

namespace slabfs::engine {

// The generations one read-only open reads, registered: one, and two while
// it moves to a newer commit. Not thread-safe: its owner serialises calls
// (ContainerImpl holds commit_mu_).
class ReaderSlot {
 public:
  explicit ReaderSlot(File* file) : file_(file) {}
  ~ReaderSlot() { Release(); }
  ReaderSlot(const ReaderSlot&) = delete;
  ReaderSlot& operator=(const ReaderSlot&) = delete;

  // Registers the newest generation: `newest` answers it (reading the
  // superblocks); the lock is taken, then `newest` asked again, until both
  // answers agree. Generations held before stay held (see Keep). Returns
  // the generation registered; where the filesystem keeps no locks, the
  // newest generation, unregistered.
  Result<uint64_t> HoldNewest(const std::function<Result<uint64_t>()>& newest);
  // Drops every registration but generation g.
  void Keep(uint64_t g);
  // Drops every registration (also done by the destructor).
  void Release() { Keep(0); }

 private:
  File* file_;
  std::vector<uint64_t> held_;
};

// The lowest generation below `below` that another open of the file holds
// as a reader, or UINT64_MAX when there is none.
Result<uint64_t> OldestReader(File* file, uint64_t below);

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_TXN_READER_TABLE_H_
