// How a `slab` command opens a container and how a writing command ends.
//
// Reading commands open the container read-only (no lock, they see the last
// commit). Writing commands open it read-write, which takes the container's
// writer lock; a second writer gets Busy naming the holder.
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

namespace slabfs::tools {

// Opens `path` read-only.
Result<std::unique_ptr<Container>> OpenForReading(const std::string& path);

// A container opened for writing by one command.
class WriteSession {
 public:
  // Opens `path` read-write (with `create`, creates it; an existing file is
  // AlreadyExists). "slab COMMAND" goes into the lock record as the holder
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
