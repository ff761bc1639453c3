// Group pages (format/object.h): a group with many children keeps them in
// pages of at most kMaxPageBytes, so that a commit that changes one child
// rewrites that child's page and the group's page table, not every entry:
// creating, renaming or removing the 100,000th file of a directory costs
// what the 1,000th does.
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

// The children of group record `rec` in name order: its inline entries, or
// every page of its table read and checked (DecodeGroupPage). `pages_read`,
// if given, gets each page's block as it is read (also when a later one
// fails), for fsck.
Result<std::vector<ChildRecord>> ReadGroupChildren(BlockStore& store, const ObjectRecord& rec, uint64_t file_end,
                                                   std::vector<BlockRef>* pages_read = nullptr);

class GroupPages {
 public:
  // A group whose entries take more bytes than this is written with pages;
  // one that has pages goes back inline below a quarter of it.
  static constexpr size_t kInlineBytes = 16 * 1024;
  // A page is split in halves beyond this; a page below a quarter of it
  // takes in the pages after it while they fit in three quarters.
  static constexpr size_t kMaxPageBytes = 16 * 1024;

  // Appends the group's entries with names in [lo, hi) (no hi: to the end),
  // in order.
  using Collect = std::function<void(std::string_view lo, const std::string* hi, std::vector<ChildRecord>* out)>;

  bool paged() const { return !pages_.empty(); }
  // Whether the group, whose entries take `bytes`, is written with pages.
  bool WantPages(size_t bytes) const { return paged() ? bytes >= kInlineBytes / 4 : bytes > kInlineBytes; }
  // The table of a group as loaded.
  void Adopt(const std::vector<ChildPageRef>& table);
  // The entry of `name` was added, removed or changed: its page is
  // rewritten at the next Write.
  void Touch(std::string_view name);
  // Writes the touched pages (all of them, the first time) from the
  // group's current entries and returns the new table. Replaced pages are
  // freed once their successors are written; on failure nothing changes.
  Result<std::vector<ChildPageRef>> Write(BlockStore& store, ObjectId group, const Collect& collect);
  // Frees every page (the group went back inline, or was removed).
  void FreeAll(BlockStore& store);
  void AppendBlocks(std::vector<BlockRef>* out) const;
  size_t num_pages() const { return pages_.size(); }

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

  std::map<std::string, Page, std::less<>> pages_;  // by key; the first key is ""
};

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_TXN_GROUP_PAGES_H_
