#include "fusefs/layout_keeper.h"

#include <algorithm>
#include <string>

namespace slabfs::fusefs {
namespace {

// Remembered layouts beyond this many are dropped oldest first: a tree of
// removals (rm -r) must not pin unbounded memory.
constexpr size_t kMaxRemembered = 4096;

}  // namespace

Result<KeptLayout> CaptureLayout(Container& c, ObjectId id, const Dataset& ds) {
  KeptLayout kept;
  kept.info = ds.info();
  SLABFS_ASSIGN_OR_RETURN(std::vector<std::string> names, c.ListAttributes(id));
  for (std::string& name : names) {
    SLABFS_ASSIGN_OR_RETURN(Attribute a, c.GetAttribute(id, name));
    kept.attrs.emplace_back(std::move(name), std::move(a));
  }
  auto path = c.PathOf(id);
  kept.path = path ? *path : "dataset " + std::to_string(id);
  return kept;
}

Result<bool> AdoptLayout(Container& c, Dataset& ds, const KeptLayout& kept) {
  std::optional<DatasetOptions> fit = FitLayout(kept.info, ds.size_bytes());
  if (!fit) return false;
  if (!SameLayout(ds.info(), *fit)) SLABFS_RETURN_IF_ERROR_R(ds.Relayout(*fit));
  SLABFS_ASSIGN_OR_RETURN(std::vector<std::string> own, c.ListAttributes(ds.id()));
  for (const auto& [name, value] : kept.attrs) {
    if (std::find(own.begin(), own.end(), name) != own.end()) continue;  // the new file's own wins
    SLABFS_RETURN_IF_ERROR_R(c.SetAttribute(ds.id(), name, value));
  }
  return true;
}

void LayoutKeeper::PruneLocked(Clock::time_point now) {
  if (now - last_prune_ < std::chrono::seconds(2) && left_.size() <= kMaxRemembered) return;
  last_prune_ = now;
  std::erase_if(left_, [&](const auto& kv) { return now - kv.second.when > window_; });
  while (left_.size() > kMaxRemembered) {
    auto oldest = std::min_element(left_.begin(), left_.end(),
                                   [](const auto& a, const auto& b) { return a.second.when < b.second.when; });
    left_.erase(oldest);
  }
  std::erase_if(new_files_, [&](const auto& kv) {
    const NewFile& f = kv.second;
    return f.open <= 0 && now - f.last_used > window_;
  });
}

void LayoutKeeper::Remember(ObjectId parent, std::string_view name, KeptLayout kept) {
  const auto now = Clock::now();
  std::lock_guard lock(mu_);
  PruneLocked(now);
  left_[{parent, std::string(name)}] = Left{now, std::move(kept)};
}

void LayoutKeeper::NoteCreated(ObjectId parent, std::string_view name, ObjectId id) {
  const auto now = Clock::now();
  std::lock_guard lock(mu_);
  PruneLocked(now);
  NewFile& f = new_files_[id];
  f = NewFile{};
  f.last_used = now;
  auto it = left_.find(std::pair<ObjectId, std::string>(parent, std::string(name)));
  if (it != left_.end()) {
    if (now - it->second.when <= window_) f.pending = std::move(it->second.kept);
    left_.erase(it);
  }
}

void LayoutKeeper::NoteTruncated(ObjectId id) {
  const auto now = Clock::now();
  std::lock_guard lock(mu_);
  PruneLocked(now);
  auto [it, added] = new_files_.try_emplace(id);
  if (!added) return;
  // Opened() counts the open that truncated it; handles opened before are
  // not counted, and their closes only end "open" sooner.
  it->second.open = 0;
  it->second.typed = true;
  it->second.exact = true;
  it->second.last_used = now;
}

bool LayoutKeeper::NeedsExactFit(ObjectId id) {
  std::lock_guard lock(mu_);
  auto it = new_files_.find(id);
  return it != new_files_.end() && it->second.exact;
}

bool LayoutKeeper::NewLocked(ObjectId id, bool untyped_only) {
  auto it = new_files_.find(id);
  if (it == new_files_.end()) return false;
  const NewFile& f = it->second;
  if (untyped_only && f.typed) return false;
  return f.open > 0 || Clock::now() - f.last_used <= window_;
}

bool LayoutKeeper::IsNew(ObjectId id) {
  std::lock_guard lock(mu_);
  return NewLocked(id, false);
}

void LayoutKeeper::MarkTyped(ObjectId id) {
  std::lock_guard lock(mu_);
  auto it = new_files_.find(id);
  if (it != new_files_.end()) it->second.typed = true;
}

bool LayoutKeeper::IsUntypedNew(ObjectId id) {
  std::lock_guard lock(mu_);
  return NewLocked(id, true);
}

void LayoutKeeper::Settle(ObjectId id) {
  std::lock_guard lock(mu_);
  new_files_.erase(id);
}

void LayoutKeeper::Forget(ObjectId id) { Settle(id); }

void LayoutKeeper::Opened(ObjectId id) {
  std::lock_guard lock(mu_);
  auto it = new_files_.find(id);
  if (it != new_files_.end()) ++it->second.open;
}

void LayoutKeeper::Closed(ObjectId id) {
  std::lock_guard lock(mu_);
  auto it = new_files_.find(id);
  if (it == new_files_.end()) return;
  --it->second.open;
  it->second.last_used = Clock::now();
}

std::optional<KeptLayout> LayoutKeeper::TakePending(ObjectId id) {
  std::lock_guard lock(mu_);
  auto it = new_files_.find(id);
  if (it == new_files_.end() || !it->second.pending) return std::nullopt;
  std::optional<KeptLayout> out = std::move(it->second.pending);
  it->second.pending.reset();
  return out;
}

void LayoutKeeper::KeepPending(ObjectId id, KeptLayout kept) {
  std::lock_guard lock(mu_);
  auto it = new_files_.find(id);
  if (it != new_files_.end() && !it->second.pending) it->second.pending = std::move(kept);
}

LayoutEdit LayoutKeeper::Staged(ObjectId id) {
  std::lock_guard lock(mu_);
  auto it = new_files_.find(id);
  return it == new_files_.end() ? LayoutEdit{} : it->second.staged;
}

void LayoutKeeper::SetStaged(ObjectId id, LayoutEdit edit) {
  std::lock_guard lock(mu_);
  auto it = new_files_.find(id);
  if (it != new_files_.end()) it->second.staged = std::move(edit);
}

bool LayoutKeeper::HasWork(ObjectId id) {
  std::lock_guard lock(mu_);
  auto it = new_files_.find(id);
  return it != new_files_.end() && (it->second.pending || !it->second.staged.empty());
}

void LayoutKeeper::MarkTypedWhileEmpty(ObjectId id) {
  std::lock_guard lock(mu_);
  auto it = new_files_.find(id);
  if (it != new_files_.end()) it->second.typed_empty = true;
}

bool LayoutKeeper::TypedWhileEmpty(ObjectId id) {
  std::lock_guard lock(mu_);
  auto it = new_files_.find(id);
  return it != new_files_.end() && it->second.typed_empty;
}

}  // namespace slabfs::fusefs
