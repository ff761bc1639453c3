#include "tools/session.h"

#include <atomic>
#include <utility>

#include <fmt/format.h>

namespace slabfs::tools {
namespace {

std::atomic<bool> g_abandoned{false};

}  // namespace

bool AbandonedWriteSession() { return g_abandoned.load(); }

Result<std::unique_ptr<Container>> OpenForReading(const std::string& path) {
  OpenOptions options;
  options.read_only = true;
  return Container::Open(path, options);
}

Result<WriteSession> WriteSession::Open(const std::string& path, std::string_view command,
                                        bool create) {
  OpenOptions options;
  options.create = create;
  options.holder = fmt::format("slab {}", command);
  SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<Container> c, Container::Open(path, options));
  return WriteSession(std::move(c));
}

WriteSession::~WriteSession() {
  if (!container_) return;
  if (container_->dirty()) {
    Abandon();
  } else {
    // Nothing to commit: closing just releases the lock.
    (void)container_->Close();
  }
}

Status WriteSession::Finish() {
  Status s = container_->Close();
  container_.reset();
  return s;
}

void WriteSession::Abandon() {
  // Deliberately never destroyed: destruction would commit (see session.h).
  (void)container_.release();
  g_abandoned.store(true);
}

}  // namespace slabfs::tools
