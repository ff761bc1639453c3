// How a `slab` command opens a file (a container, or an HDF5 / netCDF-4
// file to read) and how a writing command ends.
//
// Reading commands open the file read-only as a store (include/slabfs/
// store.h): a container (no lock, they see the last commit), or an HDF5 /
// netCDF-4 file, found by its signature (stores/store_format.h), through
// the HDF5 store (stores/open_store.h). Writing commands open a container read-write, which takes the
// container's writer lock; a second writer gets Busy naming the holder. A
// foreign file is never changed: writing commands refuse it by name.
//
// A writing command either succeeds and commits everything it did (Finish),
// or fails and commits nothing: a failed `slab import` must not leave half
// of its input in the dataset, so an unfinished session Discard()s its
// container (copy-on-write: what the engine wrote since the last commit is
// unreferenced).
#ifndef SLABFS_TOOLS_SESSION_H_
#define SLABFS_TOOLS_SESSION_H_

#include <memory>
#include <string>
#include <string_view>

#include "slabfs/container.h"
#include "slabfs/status.h"
#include "slabfs/store.h"

namespace slabfs::tools {

// Whether `path` is an HDF5 (or netCDF-4) file or a Zarr store, by its
// signature (stores/store_format.h).
bool IsForeignStore(const std::string& path);

// Opens `path` read-only as a store: a container, an HDF5 / netCDF-4 file
// or a Zarr store. A netCDF-3 file is NotSupported saying what it is
// (stores/open_store.h); anything else is opened as a container, whose
// error says what the file is not (or that it is missing). A build without
// libhdf5 (or blosc, for Zarr) answers NotSupported for such a store, saying so.
Result<std::unique_ptr<Store>> OpenStoreForReading(const std::string& path);

// Opens the container `path` read-only, for the commands that need the
// container itself (repack, erase's look before it writes, tree export).
// An HDF5 file or Zarr store is NotSupported (ForeignFileStatus).
Result<std::unique_ptr<Container>> OpenForReading(const std::string& path);

// OK for a container (or a file of no known format: opening it says why);
// NotSupported for an HDF5 file or Zarr store, for a command that `changes`
// it: "x.h5 is an HDF5 file: slab changes only slab containers; use `slab import` to
// copy it into one" (else "... this command works on slab containers
// only ...", naming the commands that read it in place).
Status ForeignFileStatus(const std::string& path, bool changes);

// A container opened for writing by one command.
class WriteSession {
 public:
  // Opens `path` read-write (with `create`, creates it; an existing file is
  // AlreadyExists; a foreign file is NotSupported, see ForeignFileStatus).
  // "slab COMMAND" goes into the lock record as the holder
  // (the engine adds the pid and host). With `pack`, extents are placed
  // back to back (OpenOptions::pack), for a file written once by a copy,
  // whose cache is then one transfer block (kTransferBlockBytes).
  static Result<WriteSession> Open(const std::string& path, std::string_view command, bool create = false,
                                   bool pack = false);

  WriteSession(WriteSession&&) noexcept = default;
  WriteSession& operator=(WriteSession&&) noexcept = default;
  // An unfinished session discards its changes (see the file comment).
  ~WriteSession();

  Container& container() { return *container_; }

  // Commits and closes; returns the commit's status.
  Status Finish();

 private:
  explicit WriteSession(std::unique_ptr<Container> c) : container_(std::move(c)) {}

  std::unique_ptr<Container> container_;
};

}  // namespace slabfs::tools

#endif  // SLABFS_TOOLS_SESSION_H_
