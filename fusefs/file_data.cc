#include "fusefs/file_data.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace slabfs::fusefs {

FileData::FileData(Dataset ds) : id_(ds.id()), slab_(std::move(ds)) {}

FileData::FileData(ObjectId id, std::shared_ptr<const StoreDataset> ds) : id_(id), foreign_(std::move(ds)) {}

FileData::FileData(ObjectId id, std::shared_ptr<WritableStoreDataset> ds)
    : id_(id), foreign_(ds), writable_(std::move(ds)) {}

DatasetInfo FileData::info() const { return slab_ ? slab_->info() : foreign_->info().dataset; }

Status FileData::Read(const Slab& sel, void* buf, const MemSpace* mem) const {
  return slab_ ? slab_->Read(sel, buf, mem) : foreign_->Read(sel, buf, mem);
}

Result<size_t> FileData::ReadBytes(uint64_t offset, size_t length, void* buf) const {
  return slab_ ? slab_->ReadBytes(offset, length, buf) : foreign_->ReadBytes(offset, length, buf);
}

Status FileData::ForEachDefinedRun(uint64_t first, uint64_t count, const Dataset::RunVisitor& fn,
                                   const Dataset::WalkCheck& check) const {
  return slab_ ? slab_->ForEachDefinedRun(first, count, fn, check)
               : foreign_->ForEachDefinedRun(first, count, fn, check);
}

Result<uint64_t> FileData::CountDefined(const Dataset::WalkCheck& check) const {
  return slab_ ? slab_->CountDefined(check) : foreign_->CountDefined();
}

}  // namespace slabfs::fusefs
