#include "engine/txn/group_pages.h"

#include <iterator>

namespace slabfs::engine {
namespace {

size_t BytesOf(const std::vector<ChildRecord>& entries) {
  size_t n = 0;
  for (const ChildRecord& c : entries) n += ChildEntryBytes(c.name);
  return n;
}

}  // namespace

Result<std::vector<ChildRecord>> ReadGroupChildren(BlockStore& store, const ObjectRecord& rec, uint64_t file_end,
                                                   std::vector<BlockRef>* pages_read) {
  if (rec.child_pages.empty()) return rec.children;
  std::vector<ChildRecord> out;
  for (size_t i = 0; i < rec.child_pages.size(); ++i) {
    const ChildPageRef& p = rec.child_pages[i];
    const std::string* next = i + 1 < rec.child_pages.size() ? &rec.child_pages[i + 1].key : nullptr;
    SLABFS_ASSIGN_OR_RETURN(std::string payload,
                            store.Read(p.block, BlockType::kGroupPage, "object " + std::to_string(rec.id) + " page"));
    if (pages_read) pages_read->push_back(p.block);
    SLABFS_ASSIGN_OR_RETURN(std::vector<ChildRecord> entries, DecodeGroupPage(payload, rec.id, p, next, file_end));
    out.insert(out.end(), std::make_move_iterator(entries.begin()), std::make_move_iterator(entries.end()));
  }
  return out;
}

void GroupPages::Adopt(const std::vector<ChildPageRef>& table) {
  pages_.clear();
  for (const ChildPageRef& p : table) pages_.emplace_hint(pages_.end(), p.key, Page{p.block, p.entries, false});
}

void GroupPages::Touch(std::string_view name) {
  if (pages_.empty()) return;
  auto it = pages_.upper_bound(name);
  --it;  // the first key is "", below every name
  it->second.dirty = true;
}

Status GroupPages::WriteRun(BlockStore& store, ObjectId group, const std::string& key,
                            const std::vector<ChildRecord>& entries, std::vector<std::pair<std::string, Page>>* out) {
  const size_t total = BytesOf(entries);
  const size_t target = total > kMaxPageBytes ? kMaxPageBytes / 2 : total;
  size_t begin = 0;
  while (begin < entries.size()) {
    size_t end = begin, bytes = 0;
    while (end < entries.size() && (end == begin || bytes + ChildEntryBytes(entries[end].name) <= target)) {
      bytes += ChildEntryBytes(entries[end].name);
      ++end;
    }
    auto ref = store.Write(BlockType::kGroupPage, EncodeGroupPage(group, entries.data() + begin, end - begin));
    if (!ref) {
      for (const auto& [k, p] : *out) store.Free(p.block);  // fresh: free at once
      out->clear();
      return ref.error();
    }
    out->emplace_back(begin == 0 ? key : entries[begin].name, Page{*ref, static_cast<uint32_t>(end - begin), false});
    begin = end;
  }
  return Status::OK();
}

Result<std::vector<ChildPageRef>> GroupPages::Write(BlockStore& store, ObjectId group, const Collect& collect) {
  if (pages_.empty()) {
    std::vector<ChildRecord> all;
    collect("", nullptr, &all);
    std::vector<std::pair<std::string, Page>> pieces;
    SLABFS_RETURN_IF_ERROR_R(WriteRun(store, group, "", all, &pieces));
    for (auto& [k, p] : pieces) pages_.emplace(std::move(k), p);
  } else {
    std::vector<std::string> touched;
    for (const auto& [k, p] : pages_)
      if (p.dirty) touched.push_back(k);
    for (const std::string& key : touched) {
      auto it = pages_.find(key);
      if (it == pages_.end() || !it->second.dirty) continue;  // taken in by an earlier page
      auto next = std::next(it);
      std::vector<ChildRecord> entries;
      collect(key, next == pages_.end() ? nullptr : &next->first, &entries);
      size_t bytes = BytesOf(entries);
      // A small page takes in the pages after it while they fit.
      std::vector<std::map<std::string, Page>::iterator> absorbed;
      while (next != pages_.end() && bytes < kMaxPageBytes / 4) {
        auto after = std::next(next);
        std::vector<ChildRecord> more;
        collect(next->first, after == pages_.end() ? nullptr : &after->first, &more);
        const size_t more_bytes = BytesOf(more);
        if (bytes + more_bytes > kMaxPageBytes * 3 / 4) break;
        entries.insert(entries.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
        bytes += more_bytes;
        absorbed.push_back(next);
        next = after;
      }
      std::vector<std::pair<std::string, Page>> pieces;
      if (!entries.empty()) SLABFS_RETURN_IF_ERROR_R(WriteRun(store, group, key, entries, &pieces));
      // Written: the old pages are garbage in the new state.
      for (auto a : absorbed) {
        store.Free(a->second.block);
        pages_.erase(a);
      }
      store.Free(it->second.block);
      pages_.erase(it);
      for (auto& [k, p] : pieces) pages_.emplace(std::move(k), p);
      if (key.empty() && pieces.empty() && !pages_.empty()) {
        // The first page went: the next one covers everything below it.
        auto first = pages_.begin();
        Page p = first->second;
        pages_.erase(first);
        pages_.emplace("", p);
      }
    }
  }
  std::vector<ChildPageRef> table;
  table.reserve(pages_.size());
  for (const auto& [k, p] : pages_) table.push_back({k, p.block, p.entries});
  return table;
}

void GroupPages::FreeAll(BlockStore& store) {
  for (const auto& [k, p] : pages_) store.Free(p.block);
  pages_.clear();
}

void GroupPages::AppendBlocks(std::vector<BlockRef>* out) const {
  for (const auto& [k, p] : pages_) out->push_back(p.block);
}

}  // namespace slabfs::engine
