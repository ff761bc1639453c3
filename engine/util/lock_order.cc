#include "engine/util/lock_order.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/util/log.h"

namespace slabfs::engine {

const char* LockRankName(LockRank rank) {
  switch (rank) {
    case LockRank::kUnranked: return "an unranked mutex";
    case LockRank::kContainerCommit: return "ContainerImpl::commit_mu_";
    case LockRank::kContainerNamespace: return "ContainerImpl::ns_mu_";
    case LockRank::kDataset: return "DatasetState::rw_";
    case LockRank::kChunkMerge: return "ChunkCache::Entry::merge_mu";
    case LockRank::kIndexLoad: return "an index's load_mu_";
    case LockRank::kDirtyDatasets: return "ContainerImpl::dirty_ds_mu_";
    case LockRank::kDiskRoom: return "DirtyRoom::mu_";
    case LockRank::kAllocator: return "Allocator::mu_";
    case LockRank::kDatasetPath: return "DatasetState::path_mu_";
    case LockRank::kChunkCache: return "ChunkCache::mu_";
    case LockRank::kBufferPool: return "BufferPool::mu_";
    case LockRank::kChunkLoad: return "ChunkCache::Load::mu";
    case LockRank::kThreadPool: return "a thread pool mutex";
  }
  return "a mutex of an unknown rank";
}

namespace lock_order {
namespace {

// More than the deepest nesting the order allows (one lock per rank, and
// a private object's beside its live state's).
constexpr int kMaxHeld = 16;

struct HeldLock {
  const void* mu;
  LockRank rank;
  bool exclusive;
};

struct HeldStack {
  HeldLock held[kMaxHeld];
  int n = 0;
};

thread_local HeldStack tls_stack;

std::string Describe(const void* mu, LockRank rank) {
  char addr[32];
  std::snprintf(addr, sizeof addr, "%p", mu);
  return std::string(LockRankName(rank)) + " (rank " + std::to_string(static_cast<int>(rank)) + ", at " + addr + ")";
}

[[noreturn]] void Fail(const std::string& msg) {
  LogWarn("lock order violated: " + msg + " (the order: engine/util/lock_order.h)");
  std::abort();
}

}  // namespace

void CheckAcquire(const void* mu, LockRank rank) {
  HeldStack& s = tls_stack;
  if (s.n == kMaxHeld) Fail("more than " + std::to_string(kMaxHeld) + " locks held by one thread");
  if (rank == LockRank::kUnranked) return;
  for (int i = 0; i < s.n; ++i) {
    const HeldLock& h = s.held[i];
    if (h.mu == mu) Fail("taking " + Describe(mu, rank) + ", which this thread already holds");
    if (h.rank != LockRank::kUnranked && h.rank >= rank)
      Fail("taking " + Describe(mu, rank) + " while holding " + Describe(h.mu, h.rank));
  }
}

void Acquired(const void* mu, LockRank rank, bool exclusive) {
  HeldStack& s = tls_stack;
  if (s.n == kMaxHeld) Fail("more than " + std::to_string(kMaxHeld) + " locks held by one thread");
  s.held[s.n++] = HeldLock{mu, rank, exclusive};
}

void Released(const void* mu) {
  HeldStack& s = tls_stack;
  for (int i = s.n; i-- > 0;) {
    if (s.held[i].mu != mu) continue;
    for (int j = i; j + 1 < s.n; ++j) s.held[j] = s.held[j + 1];
    --s.n;
    return;
  }
  char addr[32];
  std::snprintf(addr, sizeof addr, "%p", mu);
  Fail(std::string("releasing the mutex at ") + addr + ", which this thread does not hold");
}

bool Held(const void* mu, bool exclusive) {
  const HeldStack& s = tls_stack;
  for (int i = 0; i < s.n; ++i)
    if (s.held[i].mu == mu) return s.held[i].exclusive || !exclusive;
  return false;
}

void FailNotHeld(const void* mu, LockRank rank) {
  Fail(Describe(mu, rank) + " should be held by this thread and is not");
}

}  // namespace lock_order
}  // namespace slabfs::engine
