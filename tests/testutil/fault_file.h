// Fake container files for tests.
//
// MemFile keeps the file in memory. FaultFile also models a disk cache: it
// remembers which writes were made since the last Sync, can "crash" after a
// chosen number of writes (every later write and sync fails), and can then
// produce the image a disk might hold after power loss: everything synced,
// plus any subset of the unsynced writes, some of them torn.
#ifndef SLABFS_TESTS_TESTUTIL_FAULT_FILE_H_
#define SLABFS_TESTS_TESTUTIL_FAULT_FILE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "engine/io/file.h"

namespace slabfs::testutil {

// The bytes of a file plus what a crash would do to them. Shared between
// the File objects opened on it.
struct Disk {
  std::mutex mu;
  std::string durable;  // as of the last sync
  std::string current;  // what reads see
  struct Write {
    uint64_t off;
    std::string data;
  };
  std::vector<Write> unsynced;
  int64_t writes = 0;         // writes and syncs so far
  int64_t reads = 0;          // reads so far (tests bound what a walk reads)
  int64_t bytes_written = 0;  // bytes of the writes so far (tests bound what a commit writes)
  int64_t syncs = 0;          // syncs so far
  // Reads and writes made while the calling thread held a lock whose rank
  // forbids block I/O (engine/util/lock_order.h): tests expect 0.
  int64_t io_under_no_block_io_lock = 0;
  int64_t crash_after = -1;  // fail every write and sync after this many
  // A full disk: a write that would make the file longer than this fails
  // with NoSpace and writes nothing (growing it with Truncate costs no
  // space: a hole).
  uint64_t capacity = UINT64_MAX;
  bool crashed = false;
  // Advisory locks, modelled as OFD locks: each FaultFile is one open.
  struct Lock {
    const void* owner;
    uint64_t off, len;
    bool exclusive;
  };
  std::vector<Lock> locks;

  // The image after a crash: durable plus each unsynced write kept with
  // probability keep_p, and a kept write torn at a random length with
  // probability torn_p.
  std::string CrashImage(std::mt19937_64& rng, double keep_p, double torn_p);
};

class FaultFile final : public engine::File {
 public:
  explicit FaultFile(std::shared_ptr<Disk> disk, std::string name = "fault.slab")
      : disk_(std::move(disk)), name_(std::move(name)) {}
  ~FaultFile() override;

  Status ReadAt(uint64_t off, void* buf, size_t n) override;
  Status WriteAt(uint64_t off, const void* buf, size_t n) override;
  Status Sync() override;
  Result<uint64_t> Size() override;
  Status Truncate(uint64_t size) override;
  Status TryLock(uint64_t off, uint64_t len, bool exclusive) override;
  Status Unlock(uint64_t off, uint64_t len) override;
  Result<std::optional<uint64_t>> LowestLockIn(uint64_t off, uint64_t len) override;
  const std::string& name() const override { return name_; }

 private:
  std::shared_ptr<Disk> disk_;
  std::string name_;
};

// A disk holding `image` as both current and durable contents.
std::shared_ptr<Disk> DiskWithImage(std::string image);

}  // namespace slabfs::testutil

#endif  // SLABFS_TESTS_TESTUTIL_FAULT_FILE_H_
