// FindNewestState: which committed state an open, a refresh and fsck take,
// when a reader in another process races the writer.
#include "engine/txn/newest_state.h"

#include <gtest/gtest.h>

#include <functional>

#include "tests/testutil/mem_container.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs {
namespace {

using engine::CheckCommitComplete;
using engine::FindNewestState;
using testutil::Disk;
using testutil::FaultFile;
using testutil::NewDisk;
using testutil::OpenOnDisk;

// A reader's open of the disk that runs `between` once, just before its
// first read past the superblock slots (the read-back of a commit record):
// the writer works while the reader checks.
class RacingFile final : public engine::File {
 public:
  RacingFile(std::shared_ptr<Disk> disk, std::function<void()> between)
      : inner_(std::move(disk), "racing.slab"), between_(std::move(between)) {}
  Status ReadAt(uint64_t off, void* buf, size_t n) override {
    if (off >= engine::kSuperblockSlot1 + engine::kSuperblockSlotBytes && between_) {
      auto f = std::move(between_);
      between_ = nullptr;
      f();
    }
    return inner_.ReadAt(off, buf, n);
  }
  Status WriteAt(uint64_t off, const void* buf, size_t n) override { return inner_.WriteAt(off, buf, n); }
  Status Sync() override { return inner_.Sync(); }
  Result<uint64_t> Size() override { return inner_.Size(); }
  Status Truncate(uint64_t size) override { return inner_.Truncate(size); }
  const std::string& name() const override { return inner_.name(); }

 private:
  FaultFile inner_;
  std::function<void()> between_;
};

// A small commit: one attribute on the root, which rewrites its record.
void SmallCommit(Container& c, int i) {
  ASSERT_OK(c.SetAttribute(kRootId, "step", Attribute::Integer(i)));
  ASSERT_OK(c.Commit());
}

TEST(FindNewestStateTest, ARecordOverwrittenByLaterCommitsIsARaceNotAnIncompleteCommit) {
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  ASSERT_OK(c->MakeGroups("/a/b"));
  ASSERT_OK(c->Commit());
  SmallCommit(*c, 0);
  FaultFile plain(disk);
  ASSERT_OK_AND_ASSIGN(engine::NewestState before, FindNewestState(&plain));
  const engine::Superblock raced = before.sb;
  ASSERT_FALSE(raced.written.empty()) << "the commit made no record: nothing to race";

  // While the reader reads that record back, the writer commits on: the
  // space its record lists is freed and written again (no reader had
  // registered the commit).
  uint64_t newest = 0;
  RacingFile racing(disk, [&] {
    for (int i = 1; i <= 6; ++i) SmallCommit(*c, i);
    newest = raced.generation + 6;
  });
  ASSERT_OK_AND_ASSIGN(engine::NewestState found, FindNewestState(&racing));
  ASSERT_EQ(newest, raced.generation + 6);
  // The race really happened: the record no longer reads back.
  EXPECT_EQ(CheckCommitComplete(&plain, raced).code(), Code::kCorruption)
      << "the later commits did not reuse the raced commit's space";
  EXPECT_EQ(found.sb.generation, newest);
  EXPECT_FALSE(found.incomplete_generation.has_value());
}

TEST(FindNewestStateTest, AWriterThatNeverStopsIsBusyNotCorrupt) {
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  SmallCommit(*c, 0);
  // Every read-back of a record meets new commits: the reader gives up
  // with Busy (a retry later may succeed), never with Corruption.
  int step = 1;
  class Endless final : public engine::File {
   public:
    Endless(std::shared_ptr<Disk> disk, std::function<void()> commit)
        : inner_(std::move(disk), "endless.slab"), commit_(std::move(commit)) {}
    Status ReadAt(uint64_t off, void* buf, size_t n) override {
      if (off >= engine::kSuperblockSlot1 + engine::kSuperblockSlotBytes) commit_();
      return inner_.ReadAt(off, buf, n);
    }
    Status WriteAt(uint64_t off, const void* buf, size_t n) override { return inner_.WriteAt(off, buf, n); }
    Status Sync() override { return inner_.Sync(); }
    Result<uint64_t> Size() override { return inner_.Size(); }
    Status Truncate(uint64_t size) override { return inner_.Truncate(size); }
    const std::string& name() const override { return inner_.name(); }

   private:
    FaultFile inner_;
    std::function<void()> commit_;
  };
  Endless endless(disk, [&] {
    // Two commits: the second may reuse what the first freed.
    SmallCommit(*c, step++);
    SmallCommit(*c, step++);
  });
  auto found = FindNewestState(&endless);
  ASSERT_FALSE(found.has_value());
  EXPECT_EQ(found.error().code(), Code::kBusy) << found.error().ToString();
  EXPECT_GT(step, 200);
}

}  // namespace
}  // namespace slabfs
