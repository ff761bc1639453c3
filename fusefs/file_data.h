// The data behind a dataset's file, whichever store holds it: a slab
// container's Dataset (which a read-write mount also writes through) or a
// foreign store's StoreDataset (an HDF5 / netCDF-4 file, read-only; a Zarr
// store, also written through when mounted read-write:
// store_writable()). The file view's read side (read, getattr through a
// handle, lseek's SEEK_DATA/SEEK_HOLE, the user.slab.* values, the slice,
// .npy, .txt and .png views) is written once against this; what changes a
// slab dataset asks for slab(), and what changes a store's dataset for
// store_writable() (store_changes.h).
//
// Cheap to copy (a handle and a shared pointer); thread-safe as the two
// behind it are.
#ifndef SLABFS_FUSEFS_FILE_DATA_H_
#define SLABFS_FUSEFS_FILE_DATA_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "slabfs/container.h"
#include "slabfs/store.h"
#include "slabfs/store_writer.h"

namespace slabfs::fusefs {

class FileData {
 public:
  FileData() = default;
  explicit FileData(Dataset ds);
  FileData(ObjectId id, std::shared_ptr<const StoreDataset> ds);
  // A writable store's dataset: read and written through `ds`.
  FileData(ObjectId id, std::shared_ptr<WritableStoreDataset> ds);

  ObjectId id() const { return id_; }
  // What the dataset is now (a slab dataset's shape can change while open;
  // a foreign store's is fixed).
  DatasetInfo info() const;
  // As Dataset::Read / StoreDataset::Read.
  Status Read(const Slab& sel, void* buf, const MemSpace* mem = nullptr) const;
  // As Dataset::ReadBytes: shortened at the end.
  Result<size_t> ReadBytes(uint64_t offset, size_t length, void* buf) const;
  // As Dataset::ForEachDefinedRun: runs of defined elements among
  // [first, first + count) in C order until fn returns false. A foreign
  // store's defined elements are those of its stored chunks, found box by
  // box (StoreDataset::Defined), in windows of at most 2^22 elements that
  // call `check` before each.
  Status ForEachDefinedRun(uint64_t first, uint64_t count, const Dataset::RunVisitor& fn,
                           const Dataset::WalkCheck& check = {}) const;
  Result<uint64_t> CountDefined(const Dataset::WalkCheck& check = {}) const;

  // The slab dataset, or null for a foreign store's.
  const Dataset* slab() const { return slab_ ? &*slab_ : nullptr; }
  Dataset* slab() { return slab_ ? &*slab_ : nullptr; }
  // The foreign store's dataset, or null for a slab one.
  const StoreDataset* foreign() const { return foreign_.get(); }
  // The writable store's dataset, or null (a slab dataset, or a store
  // mounted read-only).
  const std::shared_ptr<WritableStoreDataset>& store_writable() const { return writable_; }

 private:
  ObjectId id_ = 0;
  std::optional<Dataset> slab_;
  std::shared_ptr<const StoreDataset> foreign_;
  std::shared_ptr<WritableStoreDataset> writable_;  // foreign_ too, when set
};

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_FILE_DATA_H_
