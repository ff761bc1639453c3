// Group pages (format/object.h): a group with many children keeps them in
// pages of at most kMaxPageBytes, so that a commit that changes one child
// rewrites that child's page and the group's page table, not every entry:
// creating, renaming or removing the 100,000th file of a directory costs
// what the 1,000th does. A group with many pages keeps its page table in
// group page tables too, so that such a commit rewrites one page, one page
// table and a group block of a few table references, not a table of every
// page (about 10 KB at 100,000 entries).
//
// ReadGroupChildren reads a group's entries, inline or paged (load, fsck).
// GroupPages is a writer's bookkeeping for one group: which page holds which
// names, and which pages a change touched since the last commit.
#ifndef SLABFS_ENGINE_TXN_GROUP_PAGES_H_
#define SLABFS_ENGINE_TXN_GROUP_PAGES_H_

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/format/object.h"
#include "engine/txn/block_store.h"

namespace slabfs::engine {

// The page table of group record `rec`: its own (version 2), or its group
// page tables read and checked (version 3, DecodeGroupPageTable); empty for
// a group with inline entries. `blocks_read`, if given, gets each table's
// block as it is read (also when a later one fails), for fsck.
Result<std::vector<ChildPageRef>> ReadGroupPageTable(BlockStore& store, const ObjectRecord& rec, uint64_t file_end,
                                                     std::vector<BlockRef>* blocks_read = nullptr);
// The children of group record `rec` in name order: its inline entries, or
// every page of its page table read and checked (DecodeGroupPage).
// `blocks_read`, if given, gets each page table's and page's block as it is
// read (also when a later one fails), for fsck; `page_table` the page table.
Result<std::vector<ChildRecord>> ReadGroupChildren(BlockStore& store, const ObjectRecord& rec, uint64_t file_end,
                                                   std::vector<BlockRef>* blocks_read = nullptr,
                                                   std::vector<ChildPageRef>* page_table = nullptr);

class GroupPages {
 public:
  // A group whose entries take more bytes than this is written with pages;
  // one that has pages goes back inline below a quarter of it.
  static constexpr size_t kInlineBytes = 16 * 1024;
  // A page is split in halves beyond this; a page below a quarter of it
  // takes in the pages after it while they fit in three quarters.
  static constexpr size_t kMaxPageBytes = 16 * 1024;
  // A group with more pages than this keeps its page table in group page
  // tables; one that has them goes back to a table in its block at a
  // quarter of it.
  static constexpr size_t kInlineTablePages = 64;
  // A page table is split in halves beyond this many pages; one below a
  // quarter of it takes in the tables after it while they fit in three
  // quarters.
  static constexpr size_t kMaxTablePages = 64;

  // Appends the group's entries with names in [lo, hi) (no hi: to the end),
  // in order.
  using Collect = std::function<void(std::string_view lo, const std::string* hi, std::vector<ChildRecord>* out)>;

  bool paged() const { return !pages_.empty(); }
  // Whether the group, whose entries take `bytes`, is written with pages.
  bool WantPages(size_t bytes) const { return paged() ? bytes >= kInlineBytes / 4 : bytes > kInlineBytes; }
  // The page table and the page tables' references (version 3, else
  // empty) of a group as loaded.
  void Adopt(const std::vector<ChildPageRef>& page_table, const std::vector<ChildPageRef>& tables);
  // The entry of `name` was added, removed or changed: its page is
  // rewritten at the next Write.
  void Touch(std::string_view name);
  // Writes the touched pages (all of them, the first time) from the
  // group's current entries, then the page tables that list a changed page
  // (all of them when the group first has them), and puts the new page
  // table (version 2) or table of page tables (version 3) into `rec`.
  // Replaced blocks are freed once their successors are written; a failure
  // leaves what is not written yet to the next attempt.
  Status Write(BlockStore& store, ObjectId group, const Collect& collect, ObjectRecord* rec);
  // Frees every page and page table (the group went back inline, or was
  // removed).
  void FreeAll(BlockStore& store);
  void AppendBlocks(std::vector<BlockRef>* out) const;
  size_t num_pages() const { return pages_.size(); }
  size_t num_tables() const { return tables_.size(); }

 private:
  struct Page {
    BlockRef block;
    uint32_t entries = 0;
    bool dirty = false;
  };
  // Writes `entries` (names >= key) as one page, or as several of about
  // half a page each when they exceed kMaxPageBytes; the first keeps `key`.
  static Status WriteRun(BlockStore& store, ObjectId group, const std::string& key,
                         const std::vector<ChildRecord>& entries, std::vector<std::pair<std::string, Page>>* out);

  struct Table {
    BlockRef block;
    bool dirty = false;
  };
  // The table holding the page of `key` is written at the next Write.
  void TouchTable(std::string_view key);
  // Writes the dirty page tables (or all, or none: the table goes inline)
  // and puts the group's references into `rec`.
  Status WriteTables(BlockStore& store, ObjectId group, ObjectRecord* rec);
  // The page references from `lo` up to (not including) `hi` (no hi: to
  // the end), in order.
  std::vector<ChildPageRef> PageRefs(std::string_view lo, const std::string* hi) const;
  // How many pages PageRefs(lo, hi) would list, without listing them.
  size_t CountPages(std::string_view lo, const std::string* hi) const;

  std::map<std::string, Page, std::less<>> pages_;  // by key; the first key is ""
  // By the key of its first page; the first key is "". Empty while the
  // page table is in the group's block.
  std::map<std::string, Table, std::less<>> tables_;
};

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_TXN_GROUP_PAGES_H_
