#include "engine/txn/group_pages.h"

#include <algorithm>
#include <iterator>

#include "engine/format/limits.h"

namespace slabfs::engine {
namespace {

size_t BytesOf(const std::vector<ChildRecord>& entries) {
  size_t n = 0;
  for (const ChildRecord& c : entries) n += ChildEntryBytes(c.name);
  return n;
}

}  // namespace

Result<std::vector<ChildPageRef>> ReadGroupPageTable(BlockStore& store, const ObjectRecord& rec, uint64_t file_end,
                                                     std::vector<BlockRef>* blocks_read) {
  if (rec.child_tables.empty()) return rec.child_pages;
  std::vector<ChildPageRef> out;
  uint64_t children = 0;
  for (size_t i = 0; i < rec.child_tables.size(); ++i) {
    const ChildPageRef& t = rec.child_tables[i];
    const std::string* next = i + 1 < rec.child_tables.size() ? &rec.child_tables[i + 1].key : nullptr;
    SLABFS_ASSIGN_OR_RETURN(std::string payload, store.Read(t.block, BlockType::kGroupPageTable,
                                                            "object " + std::to_string(rec.id) + " page table"));
    if (blocks_read) blocks_read->push_back(t.block);
    SLABFS_ASSIGN_OR_RETURN(std::vector<ChildPageRef> pages, DecodeGroupPageTable(payload, rec.id, t, next, file_end));
    for (const ChildPageRef& p : pages) children += p.entries;
    if (children > kLoadMaxChildren)
      return Err(Status::Corruption("object " + std::to_string(rec.id) + ": bad child count"));
    out.insert(out.end(), std::make_move_iterator(pages.begin()), std::make_move_iterator(pages.end()));
  }
  return out;
}

Result<std::vector<ChildRecord>> ReadGroupChildren(BlockStore& store, const ObjectRecord& rec, uint64_t file_end,
                                                   std::vector<BlockRef>* blocks_read,
                                                   std::vector<ChildPageRef>* page_table) {
  if (rec.child_pages.empty() && rec.child_tables.empty()) {
    if (page_table) page_table->clear();
    return rec.children;
  }
  SLABFS_ASSIGN_OR_RETURN(std::vector<ChildPageRef> table, ReadGroupPageTable(store, rec, file_end, blocks_read));
  std::vector<ChildRecord> out;
  for (size_t i = 0; i < table.size(); ++i) {
    const ChildPageRef& p = table[i];
    const std::string* next = i + 1 < table.size() ? &table[i + 1].key : nullptr;
    SLABFS_ASSIGN_OR_RETURN(std::string payload,
                            store.Read(p.block, BlockType::kGroupPage, "object " + std::to_string(rec.id) + " page"));
    if (blocks_read) blocks_read->push_back(p.block);
    SLABFS_ASSIGN_OR_RETURN(std::vector<ChildRecord> entries, DecodeGroupPage(payload, rec.id, p, next, file_end));
    out.insert(out.end(), std::make_move_iterator(entries.begin()), std::make_move_iterator(entries.end()));
  }
  if (page_table) *page_table = std::move(table);
  return out;
}

void GroupPages::Adopt(const std::vector<ChildPageRef>& page_table, const std::vector<ChildPageRef>& tables) {
  pages_.clear();
  for (const ChildPageRef& p : page_table) pages_.emplace_hint(pages_.end(), p.key, Page{p.block, p.entries, false});
  tables_.clear();
  for (const ChildPageRef& t : tables) tables_.emplace_hint(tables_.end(), t.key, Table{t.block, false});
}

void GroupPages::Touch(std::string_view name) {
  if (pages_.empty()) return;
  auto it = pages_.upper_bound(name);
  --it;  // the first key is "", below every name
  it->second.dirty = true;
}

void GroupPages::TouchTable(std::string_view key) {
  if (tables_.empty()) return;
  auto it = tables_.upper_bound(key);
  --it;  // the first key is ""
  it->second.dirty = true;
}

size_t GroupPages::CountPages(std::string_view lo, const std::string* hi) const {
  size_t n = 0;
  for (auto it = pages_.lower_bound(lo); it != pages_.end() && (!hi || it->first < *hi); ++it) ++n;
  return n;
}

std::vector<ChildPageRef> GroupPages::PageRefs(std::string_view lo, const std::string* hi) const {
  std::vector<ChildPageRef> out;
  for (auto it = pages_.lower_bound(lo); it != pages_.end() && (!hi || it->first < *hi); ++it)
    out.push_back({it->first, it->second.block, it->second.entries});
  return out;
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

Status GroupPages::Write(BlockStore& store, ObjectId group, const Collect& collect, ObjectRecord* rec) {
  if (pages_.empty()) {
    std::vector<ChildRecord> all;
    collect("", nullptr, &all);
    std::vector<std::pair<std::string, Page>> pieces;
    SLABFS_RETURN_IF_ERROR(WriteRun(store, group, "", all, &pieces));
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
      if (!entries.empty()) SLABFS_RETURN_IF_ERROR(WriteRun(store, group, key, entries, &pieces));
      // Written: the old pages are garbage in the new state, and the page
      // tables that listed them or list the new ones change.
      for (auto a : absorbed) {
        TouchTable(a->first);
        store.Free(a->second.block);
        pages_.erase(a);
      }
      TouchTable(key);
      store.Free(it->second.block);
      pages_.erase(it);
      for (auto& [k, p] : pieces) {
        TouchTable(k);
        pages_.emplace(std::move(k), p);
      }
      if (key.empty() && pieces.empty() && !pages_.empty()) {
        // The first page went: the next one covers everything below it.
        auto first = pages_.begin();
        Page p = first->second;
        TouchTable(first->first);
        pages_.erase(first);
        pages_.emplace("", p);
        TouchTable("");
      }
    }
  }
  return WriteTables(store, group, rec);
}

Status GroupPages::WriteTables(BlockStore& store, ObjectId group, ObjectRecord* rec) {
  rec->child_pages.clear();
  rec->child_tables.clear();
  const bool want = tables_.empty() ? pages_.size() > kInlineTablePages : pages_.size() > kInlineTablePages / 4;
  if (!want) {
    for (const auto& [k, t] : tables_) store.Free(t.block);
    tables_.clear();
    rec->child_pages = PageRefs("", nullptr);
    return Status::OK();
  }
  // Writes the pages from `key` up to `hi` as one table, or as several of
  // about half a table each when they exceed kMaxTablePages.
  auto write_run = [&](const std::string& key, const std::string* hi, std::vector<std::pair<std::string, Table>>* out) {
    const std::vector<ChildPageRef> refs = PageRefs(key, hi);
    const size_t per = refs.size() > kMaxTablePages ? kMaxTablePages / 2 : refs.size();
    for (size_t begin = 0; begin < refs.size(); begin += per) {
      const size_t n = std::min(per, refs.size() - begin);
      auto ref = store.Write(BlockType::kGroupPageTable, EncodeGroupPageTable(group, refs.data() + begin, n));
      if (!ref) {
        for (const auto& [k, t] : *out) store.Free(t.block);  // fresh: free at once
        out->clear();
        return ref.error();
      }
      out->emplace_back(refs[begin].key, Table{*ref, false});
    }
    return Status::OK();
  };
  if (tables_.empty()) {
    std::vector<std::pair<std::string, Table>> pieces;
    SLABFS_RETURN_IF_ERROR(write_run("", nullptr, &pieces));
    for (auto& [k, t] : pieces) tables_.emplace(std::move(k), t);
  } else {
    // A table is keyed by its first page: a table whose first page went
    // (taken in by a page before it) takes the key of its next page, and
    // one left without pages goes. The first table always keeps page "".
    for (auto it = tables_.begin(); it != tables_.end();) {
      auto next = std::next(it);
      auto first = pages_.lower_bound(it->first);
      if (first == pages_.end() || (next != tables_.end() && first->first >= next->first)) {
        store.Free(it->second.block);
        it = tables_.erase(it);
        continue;
      }
      if (first->first != it->first) {
        Table t = it->second;
        t.dirty = true;
        tables_.erase(it);
        tables_.emplace(first->first, t);
      }
      it = next;
    }
    std::vector<std::string> touched;
    for (const auto& [k, t] : tables_)
      if (t.dirty) touched.push_back(k);
    for (const std::string& key : touched) {
      auto it = tables_.find(key);
      if (it == tables_.end() || !it->second.dirty) continue;  // taken in by an earlier table
      auto next = std::next(it);
      size_t count = CountPages(key, next == tables_.end() ? nullptr : &next->first);
      // A small table takes in the tables after it while they fit.
      std::vector<std::map<std::string, Table>::iterator> absorbed;
      while (next != tables_.end() && count < kMaxTablePages / 4) {
        auto after = std::next(next);
        const size_t more = CountPages(next->first, after == tables_.end() ? nullptr : &after->first);
        if (count + more > kMaxTablePages * 3 / 4) break;
        count += more;
        absorbed.push_back(next);
        next = after;
      }
      std::vector<std::pair<std::string, Table>> pieces;
      SLABFS_RETURN_IF_ERROR(write_run(key, next == tables_.end() ? nullptr : &next->first, &pieces));
      for (auto a : absorbed) {
        store.Free(a->second.block);
        tables_.erase(a);
      }
      store.Free(it->second.block);
      tables_.erase(it);
      for (auto& [k, t] : pieces) tables_.emplace(std::move(k), t);
    }
  }
  // Each table's pages, counted in one pass over the pages (the first
  // table's key is "", every page's table is the last one keyed at or
  // before it), without copying their references.
  auto page = pages_.begin();
  for (auto it = tables_.begin(); it != tables_.end(); ++it) {
    auto next = std::next(it);
    size_t count = 0;
    for (; page != pages_.end() && (next == tables_.end() || page->first < next->first); ++page) ++count;
    rec->child_tables.push_back({it->first, it->second.block, static_cast<uint32_t>(count)});
  }
  return Status::OK();
}

void GroupPages::FreeAll(BlockStore& store) {
  for (const auto& [k, p] : pages_) store.Free(p.block);
  pages_.clear();
  for (const auto& [k, t] : tables_) store.Free(t.block);
  tables_.clear();
}

void GroupPages::AppendBlocks(std::vector<BlockRef>* out) const {
  for (const auto& [k, p] : pages_) out->push_back(p.block);
  for (const auto& [k, t] : tables_) out->push_back(t.block);
}

}  // namespace slabfs::engine
