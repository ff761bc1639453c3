#include "fusefs/store_changes.h"

#include <fmt/format.h>

#include "fusefs/log.h"
#include "fusefs/request.h"
#include "fusefs/stale_end_page.h"
#include "slabfs/store_writer.h"

namespace slabfs::fusefs {
namespace {

Status NoWriter(const Filesystem& fs) {
  return Status::ReadOnly(fmt::format("{} stores are mounted read-only here", fs.store.format()));
}

}  // namespace

Status SetObjectAttribute(Filesystem& fs, ObjectId id, std::string_view name, const Attribute& value) {
  if (fs.container != nullptr) return fs.container->SetAttribute(id, name, value);
  if (fs.writer == nullptr) return NoWriter(fs);
  SLABFS_RETURN_IF_ERROR(fs.writer->SetAttribute(id, name, value));
  // A Zarr array's _FillValue may be its fill value, which every element of
  // an array that stores nothing reads as: the kernel's pages of the file
  // (and of its memory maps) go.
  if (name == "_FillValue") fs.invalidator.Invalidate(id, 0, 0, kInvalidateWait);
  return Status::OK();
}

Status RemoveObjectAttribute(Filesystem& fs, ObjectId id, std::string_view name) {
  if (fs.container != nullptr) return fs.container->DeleteAttribute(id, name);
  if (fs.writer == nullptr) return NoWriter(fs);
  return fs.writer->RemoveAttribute(id, name);
}

Result<ObjectId> CreateObjectGroup(Filesystem& fs, ObjectId parent, std::string_view name) {
  if (fs.container != nullptr) return fs.container->CreateGroup(parent, name);
  if (fs.writer == nullptr) return Err(NoWriter(fs));
  return fs.writer->CreateGroup(parent, name);
}

int WriteToStore(fuse_req_t req, Filesystem& fs, fuse_ino_t ino, FileHandle* fh, const char* buf, size_t size,
                 off_t off) {
  std::shared_ptr<WritableStoreDataset> ds = fh->data.store_writable();
  if (ds == nullptr) {
    fh->DoneWith();
    return Refuse("write", Describe(fs, ino), NoWriter(fs));
  }
  const uint64_t old_size = ds->info().dataset.size_bytes;
  const uint64_t told_size = fs.inodes.ReportedSize(ino, old_size);  // the end the kernel knows
  auto n = ds->WriteBytesUpTo(static_cast<uint64_t>(off), size, buf, /*grow_rows=*/true);
  if (!n) {
    fh->DoneWith();
    return Refuse("write", fmt::format("{} [{}, +{})", Describe(fs, ino), off, size), n.error());
  }
  if (*n < size) {
    Log().info("write {} [{}, +{}): {} bytes fit before the end of the dataset; the rest is refused", Describe(fs, ino),
               off, size, *n);
  }
  // A write that ends inside a row it added leaves a partial row: the size
  // reported is where it ended until the handle closes, as on a container,
  // so that the next O_APPEND write continues there (InodeTable).
  const DatasetInfo now = ds->info().dataset;
  fs.inodes.NoteWriteEnd(ino, fh, static_cast<uint64_t>(off) + *n, old_size, now.size_bytes);
  fh->written.store(true, std::memory_order_relaxed);
  fh->DoneWith();
  fs.inodes.Touch(ino);
  // A gap between the end the kernel knew and the write reads as the fill
  // value.
  if (static_cast<uint64_t>(off) > told_size) {
    DropStaleEndPage(fs, ino, now.fill, told_size, static_cast<uint64_t>(off), static_cast<uint64_t>(off),
                     static_cast<uint64_t>(off) + *n);
  }
  fuse_reply_write(req, *n);
  return 0;
}

Status TruncateInStore(Filesystem& fs, const FileData& data, uint64_t size) {
  std::shared_ptr<WritableStoreDataset> ds = data.store_writable();
  if (ds == nullptr) return NoWriter(fs);
  const DatasetInfo info = ds->info().dataset;
  if (size == info.size_bytes) return Status::OK();
  if (!info.length_resizable) {
    return Status::InvalidArgument(
        fmt::format("size {} requested, the dataset has a fixed size of {} bytes (its first dimension cannot change)",
                    size, info.size_bytes));
  }
  return ds->SetSizeBytes(size);
}

}  // namespace slabfs::fusefs
