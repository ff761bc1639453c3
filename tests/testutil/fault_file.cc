#include "tests/testutil/fault_file.h"

#include <cstring>

#include "engine/util/lock_order.h"

namespace slabfs::testutil {

std::string Disk::CrashImage(std::mt19937_64& rng, double keep_p, double torn_p) {
  std::lock_guard lock(mu);
  std::string img = durable;
  std::uniform_real_distribution<double> u(0, 1);
  for (const auto& w : unsynced) {
    if (u(rng) >= keep_p) continue;
    size_t n = w.data.size();
    if (n > 1 && u(rng) < torn_p) n = std::uniform_int_distribution<size_t>(1, n - 1)(rng);
    if (img.size() < w.off + n) img.resize(w.off + n, '\0');
    std::memcpy(img.data() + w.off, w.data.data(), n);
  }
  return img;
}

FaultFile::~FaultFile() {
  // Closing an open file drops its locks.
  std::lock_guard lock(disk_->mu);
  std::erase_if(disk_->locks, [&](const Disk::Lock& l) { return l.owner == this; });
}

Status FaultFile::ReadAt(uint64_t off, void* buf, size_t n) {
  std::lock_guard lock(disk_->mu);
  ++disk_->reads;
  if (engine::NoBlockIoLocksHeld() > 0) ++disk_->io_under_no_block_io_lock;
  if (off > disk_->current.size() || disk_->current.size() - off < n)
    return Status::Corruption(name_ + " is truncated");
  std::memcpy(buf, disk_->current.data() + off, n);
  return Status::OK();
}

Status FaultFile::WriteAt(uint64_t off, const void* buf, size_t n) {
  std::lock_guard lock(disk_->mu);
  if (engine::NoBlockIoLocksHeld() > 0) ++disk_->io_under_no_block_io_lock;
  if (disk_->crashed || (disk_->crash_after >= 0 && disk_->writes >= disk_->crash_after)) {
    disk_->crashed = true;
    return Status::IOError(name_ + ": simulated crash");
  }
  if (off + n > disk_->current.size() && off + n > disk_->capacity) {
    return Status::NoSpace(name_ + ": simulated full disk");
  }
  ++disk_->writes;
  disk_->bytes_written += static_cast<int64_t>(n);
  if (disk_->current.size() < off + n) disk_->current.resize(off + n, '\0');
  std::memcpy(disk_->current.data() + off, buf, n);
  disk_->unsynced.push_back({off, std::string(static_cast<const char*>(buf), n)});
  return Status::OK();
}

Status FaultFile::Sync() {
  std::lock_guard lock(disk_->mu);
  if (disk_->crashed || (disk_->crash_after >= 0 && disk_->writes >= disk_->crash_after)) {
    disk_->crashed = true;
    return Status::IOError(name_ + ": simulated crash");
  }
  ++disk_->writes;
  ++disk_->syncs;
  disk_->durable = disk_->current;
  disk_->unsynced.clear();
  return Status::OK();
}

Result<uint64_t> FaultFile::Size() {
  std::lock_guard lock(disk_->mu);
  return static_cast<uint64_t>(disk_->current.size());
}

Status FaultFile::Truncate(uint64_t size) {
  std::lock_guard lock(disk_->mu);
  if (disk_->crashed) return Status::IOError(name_ + ": simulated crash");
  // Modelled as synced at once (ftruncate after a durable commit).
  disk_->current.resize(size);
  disk_->durable.resize(std::min<size_t>(disk_->durable.size(), size));
  return Status::OK();
}

namespace {

bool Overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen) { return a < b + blen && b < a + alen; }

}  // namespace

Status FaultFile::TryLock(uint64_t off, uint64_t len, bool exclusive) {
  std::lock_guard lock(disk_->mu);
  for (const Disk::Lock& l : disk_->locks) {
    if (l.owner != this && Overlaps(l.off, l.len, off, len) && (exclusive || l.exclusive)) {
      return Status::Busy(name_ + " is locked");
    }
  }
  std::erase_if(disk_->locks, [&](const Disk::Lock& l) { return l.owner == this && l.off == off && l.len == len; });
  disk_->locks.push_back({this, off, len, exclusive});
  return Status::OK();
}

Status FaultFile::Unlock(uint64_t off, uint64_t len) {
  std::lock_guard lock(disk_->mu);
  std::erase_if(disk_->locks, [&](const Disk::Lock& l) { return l.owner == this && l.off == off && l.len == len; });
  return Status::OK();
}

Result<std::optional<uint64_t>> FaultFile::LowestLockIn(uint64_t off, uint64_t len) {
  std::lock_guard lock(disk_->mu);
  std::optional<uint64_t> lowest;
  for (const Disk::Lock& l : disk_->locks) {
    if (l.owner == this || !Overlaps(l.off, l.len, off, len)) continue;
    const uint64_t start = std::max(l.off, off);
    if (!lowest || start < *lowest) lowest = start;
  }
  return lowest;
}

std::shared_ptr<Disk> DiskWithImage(std::string image) {
  auto d = std::make_shared<Disk>();
  d->durable = image;
  d->current = std::move(image);
  return d;
}

}  // namespace slabfs::testutil
