#include "fusefs/inode_table.h"

#include <time.h>

#include <cstdlib>
#include <utility>

#include "engine/util/expensive_checks.h"
#include "fusefs/log.h"

namespace slabfs::fusefs {
namespace {

// Inode table locks the calling thread holds: the lock is a leaf, so never
// more than one (checked where the expensive checks are on).
thread_local int inode_locks_held = 0;

// Runs before the lock is taken, so that a thread taking it again aborts
// with a message instead of waiting for itself.
InodeTable& BeforeLocking(InodeTable& table) {
  if (inode_locks_held != 0 && engine::ExpensiveChecks()) {
    Log().critical("an inode table lock taken while holding one: it is a leaf");
    std::abort();
  }
  ++inode_locks_held;
  return table;
}

}  // namespace

InodeTable::Locked::Locked(InodeTable& table) : table_(BeforeLocking(table)), lock_(table.notes_.mu) {}

InodeTable::Locked::~Locked() { --inode_locks_held; }

InodeTable::Note* InodeTable::Locked::Find(ObjectId id) {
  auto it = table_.notes_.by_id.find(id);
  return it == table_.notes_.by_id.end() ? nullptr : &it->second;
}

InodeTable::Note& InodeTable::Locked::Get(ObjectId id) { return table_.notes_.by_id[id]; }

void InodeTable::Locked::SetAppendEnd(Note& note, uint64_t end, const void* owner) {
  const bool changes = (note.append_end != 0) != (end != 0);
  note.append_end = end;
  note.append_owner = end != 0 ? owner : nullptr;
  if (!changes) return;
  table_.partial_rows_.fetch_add(end != 0 ? 1 : -1, std::memory_order_relaxed);
  if (!engine::ExpensiveChecks()) return;
  // Partial rows come and go with appends only, so a recount is cheap
  // enough here.
  int noted = 0;
  for (const auto& entry : table_.notes_.by_id) noted += entry.second.append_end != 0 ? 1 : 0;
  if (noted != table_.partial_rows()) {
    Log().critical("inode table: {} partial rows counted, {} noted", table_.partial_rows(), noted);
    std::abort();
  }
}

timespec InodeTable::MTime(ObjectId id) {
  Locked locked(*this);
  const Note* note = locked.Find(id);
  return note != nullptr && note->mtime.tv_sec != 0 ? note->mtime : default_mtime_;
}

void InodeTable::Touch(ObjectId id) {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  SetMTime(id, now);
}

void InodeTable::SetMTime(ObjectId id, timespec t) {
  Locked locked(*this);
  locked.Get(id).mtime = t;
}

void InodeTable::AddOpenFile(const Dataset& ds) {
  Locked locked(*this);
  Note& note = locked.Get(ds.id());
  if (note.open_handles++ == 0) note.open_dataset = ds;
}

void InodeTable::AddOpenFile(ObjectId id) {
  Locked locked(*this);
  ++locked.Get(id).open_handles;
}

void InodeTable::DropOpenFile(ObjectId id) {
  // Destroyed after the lock is released: the engine reclaims a removed
  // dataset's space when its last handle goes.
  Dataset last;
  Locked locked(*this);
  Note* note = locked.Find(id);
  if (note == nullptr || note->open_handles == 0) return;
  if (--note->open_handles == 0) {
    last = std::move(note->open_dataset);
    locked.SetAppendEnd(*note, 0, nullptr);
  }
}

std::optional<Dataset> InodeTable::OpenFileDataset(ObjectId id) {
  Locked locked(*this);
  const Note* note = locked.Find(id);
  if (note == nullptr || note->open_handles == 0) return std::nullopt;
  return note->open_dataset;
}

int InodeTable::OpenHandles(ObjectId id) {
  Locked locked(*this);
  const Note* note = locked.Find(id);
  return note == nullptr ? 0 : note->open_handles;
}

uint64_t InodeTable::ReportedSize(ObjectId id, uint64_t size_bytes) {
  if (partial_rows() == 0) return size_bytes;
  Locked locked(*this);
  const Note* note = locked.Find(id);
  if (note == nullptr || note->append_end == 0 || note->append_end >= size_bytes) return size_bytes;
  return note->append_end;
}

void InodeTable::NoteWriteEnd(ObjectId id, const void* owner, uint64_t end, uint64_t old_size, uint64_t new_size) {
  // The common write, inside the dataset with no partial row anywhere,
  // takes no lock.
  if (end <= old_size && partial_rows() == 0) return;
  Locked locked(*this);
  Note* note = locked.Find(id);
  if (note == nullptr) return;
  const uint64_t reported = note->append_end != 0 && note->append_end < old_size ? note->append_end : old_size;
  if (end <= reported) return;  // inside what was there
  // A partial row, or a complete one.
  locked.SetAppendEnd(*note, end < new_size ? end : 0, owner);
}

void InodeTable::ForgetAppendEnd(ObjectId id) {
  Locked locked(*this);
  if (Note* note = locked.Find(id)) locked.SetAppendEnd(*note, 0, nullptr);
}

bool InodeTable::EndAppend(ObjectId id, const void* owner) {
  if (partial_rows() == 0) return false;
  Locked locked(*this);
  Note* note = locked.Find(id);
  if (note == nullptr || note->append_end == 0 || note->append_owner != owner) return false;
  locked.SetAppendEnd(*note, 0, nullptr);
  return true;
}

}  // namespace slabfs::fusefs
