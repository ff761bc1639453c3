#include "tools/session.h"

#include <utility>

#include <fmt/format.h>

#include "tools/commands.h"

namespace slabfs::tools {
Result<std::unique_ptr<Container>> OpenForReading(const std::string& path) {
  OpenOptions options;
  options.read_only = true;
  return Container::Open(path, options);
}

Result<WriteSession> WriteSession::Open(const std::string& path, std::string_view command, bool create, bool pack) {
  OpenOptions options;
  options.create = create;
  options.pack = pack;
  // A file written once by a copy (repack, import into a new container):
  // a cache of one transfer block, so that encoding and writing back keep
  // pace with the copy (its progress bar and Ctrl-C see the real work, not
  // one long final commit) and memory stays bounded.
  if (pack) options.cache_bytes = kTransferBlockBytes;
  options.holder = fmt::format("slab {}", command);
  SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<Container> c, Container::Open(path, options));
  return WriteSession(std::move(c));
}

WriteSession::~WriteSession() {
  if (container_) container_->Discard();
}

Status WriteSession::Finish() {
  Status s = container_->Close();
  container_.reset();
  return s;
}

}  // namespace slabfs::tools
