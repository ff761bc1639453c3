// The change side of a store (include/slabfs/store.h), an optional
// capability: a store that can be changed in place hands out a StoreWriter
// (Store::writer()), and through it datasets that can be written
// (WritableStoreDataset), attributes set and removed, and groups made.
// A store that cannot be changed (an HDF5 file, a store opened read-only)
// has no writer, and front ends refuse changes to it with ReadOnly.
//
//   StoreWriter* w = store->writer();                 // null: read-only
//   auto ds = w->OpenDatasetForWriting(id);
//   (*ds)->Write(slabfs::Slab::Box({0, 0}, {2, 10}), buf);
//   (*ds)->Resize(100);                               // first dimension
//   w->SetAttribute(id, "units", slabfs::Attribute::String("K"));
//   w->Sync();                                        // durable
//
// The model is the container's Dataset (include/slabfs/container.h): a
// write is a hyperslab write, the byte view's writes (WriteBytesUpTo,
// SetSizeBytes) behave as the container's, and the shape changes along
// the first dimension only. What a change guarantees after a crash is the
// store's to say (a Zarr store replaces each chunk file whole, with no
// atomicity across chunks: see stores/zarr/zarr_writer.h); Sync() makes
// every change made before it durable.
//
// Thread safety: every method may be called from any number of threads at
// once. Writes to one dataset are serialised (two writes to one chunk never
// lose each other's elements); reads run beside them and see each chunk
// before or after a write, never a mix.
//
// Errors: as Store's, and ReadOnly for a dataset the store can read but
// not write (the message says why: a codec it cannot encode, ...),
// NotSupported for a change the store does not make at all, OutOfRange for
// a write or size past what the dataset may reach, AlreadyExists for a
// name taken, InvalidArgument for a bad selection, size or name, IOError
// and NoSpace from the file system.
#ifndef SLABFS_STORE_WRITER_H_
#define SLABFS_STORE_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "slabfs/attribute.h"
#include "slabfs/status.h"
#include "slabfs/store.h"
#include "slabfs/types.h"

namespace slabfs {

// A dataset of a store that can be written.
class WritableStoreDataset : public StoreDataset {
 public:
  // Writes the selection `sel` from buf (a dense C-order array of
  // sel.extents(), or as `mem` says), as Dataset::Write does. Elements of
  // a chunk the write does not cover keep their values. InvalidArgument
  // for a selection of the wrong rank or outside the shape; ReadOnly when
  // the dataset cannot be written (read_only_reason()).
  virtual Status Write(const Slab& sel, const void* buf, const MemSpace* mem = nullptr) = 0;
  // Sets the length of the first dimension to `rows`. New rows read as the
  // fill value; rows cut off are gone (chunks wholly outside are removed),
  // and read as the fill value if the dataset grows again. OutOfRange past
  // the maximum shape; InvalidArgument when the first dimension cannot
  // change.
  virtual Status Resize(uint64_t rows) = 0;
  // Why the dataset cannot be written ("" when it can).
  virtual std::string read_only_reason() const = 0;

  // The byte view's write, as Dataset::WriteBytesUpTo: partial elements at
  // either end are read and merged; with grow_rows a write past the end
  // grows the first dimension by whole rows (the rest of the last row is
  // fill) when it can change; a write reaching past the largest size
  // stores what fits and returns its count, and one starting at or past it
  // is OutOfRange. The whole call runs as one change (Exclusively).
  Result<size_t> WriteBytesUpTo(uint64_t offset, size_t length, const void* buf, bool grow_rows);
  // The mount's truncate, as Dataset::SetSizeBytes: a whole number of rows
  // of a dataset whose first dimension can change (InvalidArgument for
  // any other size, OutOfRange past the maximum); the current size always.
  Status SetSizeBytes(uint64_t size);

 protected:
  // Runs fn while no other byte-view change of this dataset runs, through
  // this handle or any other (Write and Resize themselves are serialised
  // by the store however they are called).
  virtual Status Exclusively(const std::function<Status()>& fn) = 0;
};

// The changes a store makes.
class StoreWriter {
 public:
  virtual ~StoreWriter() = default;

  // Dataset `id` for writing. NotADataset, NotFound as Store::OpenDataset.
  // A dataset the store cannot write still opens; its writes answer
  // ReadOnly with read_only_reason().
  virtual Result<std::shared_ptr<WritableStoreDataset>> OpenDatasetForWriting(ObjectId id) = 0;
  // Sets or replaces attribute `name` of group or dataset `id`.
  virtual Status SetAttribute(ObjectId id, std::string_view name, const Attribute& value) = 0;
  // NotFound when there is no such attribute.
  virtual Status RemoveAttribute(ObjectId id, std::string_view name) = 0;
  // A new empty group `name` in group `parent`; its id. AlreadyExists,
  // InvalidArgument for a name slabfs does not accept (ValidateName).
  virtual Result<ObjectId> CreateGroup(ObjectId parent, std::string_view name) = 0;
  // Makes every change made so far durable (fsync of what the changes
  // renamed or created).
  virtual Status Sync() = 0;
};

}  // namespace slabfs

#endif  // SLABFS_STORE_WRITER_H_
