// InodeTable: modification times, open handles and the datasets they keep,
// and the partial rows an appending writer leaves, as the mount's handlers
// use them.
#include "fusefs/inode_table.h"

#include <gtest/gtest.h>
#include <time.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/testutil/mem_container.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::fusefs {
namespace {

constexpr timespec kMountTime{.tv_sec = 1700000000, .tv_nsec = 5};

// Two handles of one file, as the partial-row calls see them.
const char kHandles[2] = {};
const void* const kOwnerA = &kHandles[0];
const void* const kOwnerB = &kHandles[1];

class InodeTableTest : public testing::Test {
 protected:
  void SetUp() override {
    auto c = testutil::OpenOnDisk(testutil::NewDisk());
    ASSERT_TRUE(c.has_value()) << c.error().ToString();
    container_ = std::move(*c);
  }

  // A new 1-D u1 dataset of n bytes at path.
  Dataset Make(const std::string& path, uint64_t n = 10) {
    auto ds = container_->CreateDataset(path, DatasetOptions{.dtype = DType::kU1, .shape = {n}});
    EXPECT_TRUE(ds.has_value()) << ds.error().ToString();
    return ds ? *ds : Dataset();
  }

  std::unique_ptr<Container> container_;
  InodeTable table_{kMountTime};
};

bool SameTime(timespec a, timespec b) { return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec; }

TEST_F(InodeTableTest, ReportsTheMountTimeUntilAChange) {
  EXPECT_TRUE(SameTime(table_.MTime(42), kMountTime));
  table_.SetMTime(42, {.tv_sec = 123, .tv_nsec = 456});
  EXPECT_TRUE(SameTime(table_.MTime(42), {.tv_sec = 123, .tv_nsec = 456}));
  EXPECT_TRUE(SameTime(table_.MTime(43), kMountTime));

  timespec before{};
  clock_gettime(CLOCK_REALTIME, &before);
  table_.Touch(43);
  const timespec t = table_.MTime(43);
  EXPECT_TRUE(t.tv_sec > before.tv_sec || (t.tv_sec == before.tv_sec && t.tv_nsec >= before.tv_nsec));
}

TEST_F(InodeTableTest, CountsOpenHandlesAndKeepsTheDatasetWhileAnyIsOpen) {
  Dataset ds = Make("/d");
  EXPECT_EQ(table_.OpenHandles(ds.id()), 0);
  EXPECT_FALSE(table_.OpenFileDataset(ds.id()).has_value());

  table_.AddOpenFile(ds);
  table_.AddOpenFile(ds);
  EXPECT_EQ(table_.OpenHandles(ds.id()), 2);
  auto open = table_.OpenFileDataset(ds.id());
  ASSERT_TRUE(open.has_value());
  EXPECT_EQ(open->id(), ds.id());

  table_.DropOpenFile(ds.id());
  EXPECT_EQ(table_.OpenHandles(ds.id()), 1);
  EXPECT_TRUE(table_.OpenFileDataset(ds.id()).has_value());
  table_.DropOpenFile(ds.id());
  EXPECT_EQ(table_.OpenHandles(ds.id()), 0);
  EXPECT_FALSE(table_.OpenFileDataset(ds.id()).has_value());
}

TEST_F(InodeTableTest, ACloseWithoutAnOpenIsIgnored) {
  Dataset ds = Make("/d");
  table_.DropOpenFile(ds.id());  // never opened
  EXPECT_EQ(table_.OpenHandles(ds.id()), 0);
  table_.AddOpenFile(ds);
  table_.DropOpenFile(ds.id());
  table_.DropOpenFile(ds.id());  // one close too many
  EXPECT_EQ(table_.OpenHandles(ds.id()), 0);
  table_.AddOpenFile(ds);
  EXPECT_EQ(table_.OpenHandles(ds.id()), 1);
}

// fstat of a file removed while open reaches it by inode alone.
TEST_F(InodeTableTest, ReachesADatasetRemovedWhileOpen) {
  ObjectId id = 0;
  {
    Dataset ds = Make("/d", 4);
    ASSERT_OK(ds.WriteBytes(0, 4, "abcd"));
    id = ds.id();
    table_.AddOpenFile(ds);
  }
  ASSERT_OK(container_->Remove("/d"));
  EXPECT_FALSE(container_->OpenDataset(id).has_value());
  auto open = table_.OpenFileDataset(id);
  ASSERT_TRUE(open.has_value());
  char buf[4] = {};
  ASSERT_OK_AND_ASSIGN(size_t n, open->ReadBytes(0, 4, buf));
  EXPECT_EQ(std::string(buf, n), "abcd");
  open.reset();
  table_.DropOpenFile(id);
  EXPECT_FALSE(table_.OpenFileDataset(id).has_value());
}

TEST_F(InodeTableTest, AWriteEndingInsideTheLastRowIsReportedUntilTheRowIsComplete) {
  Dataset ds = Make("/d");
  table_.AddOpenFile(ds);
  // 6 bytes appended to an empty dataset of 10-byte rows: it holds a row.
  table_.NoteWriteEnd(ds.id(), kOwnerA, 6, 0, 10);
  EXPECT_EQ(table_.partial_rows(), 1);
  EXPECT_EQ(table_.ReportedSize(ds.id(), 10), 6u);
  // The next append starts at 6 and completes the row.
  table_.NoteWriteEnd(ds.id(), kOwnerA, 10, 10, 10);
  EXPECT_EQ(table_.partial_rows(), 0);
  EXPECT_EQ(table_.ReportedSize(ds.id(), 10), 10u);
}

TEST_F(InodeTableTest, AppendingPastThePartialRowMovesItsEnd) {
  Dataset ds = Make("/d");
  table_.AddOpenFile(ds);
  table_.NoteWriteEnd(ds.id(), kOwnerA, 6, 0, 10);
  table_.NoteWriteEnd(ds.id(), kOwnerA, 14, 10, 20);  // into a second row
  EXPECT_EQ(table_.partial_rows(), 1);
  EXPECT_EQ(table_.ReportedSize(ds.id(), 20), 14u);
}

TEST_F(InodeTableTest, AWriteInsideWhatWasReportedKeepsThePartialRow) {
  Dataset ds = Make("/d");
  table_.AddOpenFile(ds);
  table_.NoteWriteEnd(ds.id(), kOwnerA, 6, 0, 10);
  table_.NoteWriteEnd(ds.id(), kOwnerB, 4, 10, 10);
  EXPECT_EQ(table_.ReportedSize(ds.id(), 10), 6u);
  EXPECT_FALSE(table_.EndAppend(ds.id(), kOwnerB));  // A still owns it
}

TEST_F(InodeTableTest, AWriteInsideTheDatasetLeavesNoPartialRow) {
  Dataset ds = Make("/d");
  table_.AddOpenFile(ds);
  table_.NoteWriteEnd(ds.id(), kOwnerA, 8, 10, 10);
  table_.NoteWriteEnd(ds.id(), kOwnerA, 20, 10, 20);  // whole rows
  EXPECT_EQ(table_.partial_rows(), 0);
  EXPECT_EQ(table_.ReportedSize(ds.id(), 20), 20u);
}

TEST_F(InodeTableTest, OnlyTheOwnersCloseEndsThePartialRow) {
  Dataset ds = Make("/d");
  table_.AddOpenFile(ds);
  table_.AddOpenFile(ds);
  table_.NoteWriteEnd(ds.id(), kOwnerA, 6, 0, 10);
  EXPECT_FALSE(table_.EndAppend(ds.id(), kOwnerB));
  EXPECT_EQ(table_.ReportedSize(ds.id(), 10), 6u);
  EXPECT_TRUE(table_.EndAppend(ds.id(), kOwnerA));
  EXPECT_EQ(table_.ReportedSize(ds.id(), 10), 10u);
  EXPECT_EQ(table_.partial_rows(), 0);
  EXPECT_FALSE(table_.EndAppend(ds.id(), kOwnerA));  // already ended
}

TEST_F(InodeTableTest, TheLastCloseEndsThePartialRow) {
  Dataset ds = Make("/d");
  table_.AddOpenFile(ds);
  table_.AddOpenFile(ds);
  table_.NoteWriteEnd(ds.id(), kOwnerA, 6, 0, 10);
  table_.DropOpenFile(ds.id());
  EXPECT_EQ(table_.ReportedSize(ds.id(), 10), 6u);
  table_.DropOpenFile(ds.id());
  EXPECT_EQ(table_.ReportedSize(ds.id(), 10), 10u);
  EXPECT_EQ(table_.partial_rows(), 0);
}

TEST_F(InodeTableTest, SettingTheSizeForgetsThePartialRow) {
  Dataset ds = Make("/d");
  table_.AddOpenFile(ds);
  table_.NoteWriteEnd(ds.id(), kOwnerA, 6, 0, 10);
  table_.ForgetAppendEnd(ds.id());
  EXPECT_EQ(table_.partial_rows(), 0);
  EXPECT_EQ(table_.ReportedSize(ds.id(), 10), 10u);
  table_.ForgetAppendEnd(ds.id());  // nothing to forget
  table_.ForgetAppendEnd(999);      // no note at all
  EXPECT_EQ(table_.partial_rows(), 0);
}

TEST_F(InodeTableTest, TheReportedSizeIsNeverPastTheDatasetsEnd) {
  Dataset ds = Make("/d");
  table_.AddOpenFile(ds);
  table_.NoteWriteEnd(ds.id(), kOwnerA, 6, 0, 10);
  EXPECT_EQ(table_.ReportedSize(ds.id(), 4), 4u);  // cut shorter since
  EXPECT_EQ(table_.ReportedSize(ds.id(), 6), 6u);
  EXPECT_EQ(table_.ReportedSize(999, 10), 10u);  // another object
}

TEST_F(InodeTableTest, AWriteToAFileNeverOpenedIsNotNoted) {
  table_.NoteWriteEnd(777, kOwnerA, 6, 0, 10);
  EXPECT_EQ(table_.partial_rows(), 0);
  EXPECT_EQ(table_.ReportedSize(777, 10), 10u);
}

// Handlers on many threads, each appending to its own file while the
// others stat and touch theirs; under TSan this is the table's race check.
TEST_F(InodeTableTest, ThreadsAppendingToTheirOwnFilesKeepTheCountRight) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 500;
  std::vector<Dataset> files;
  for (int i = 0; i < kThreads; ++i) files.push_back(Make("/f" + std::to_string(i)));
  std::vector<std::thread> threads;
  std::vector<int> wrong(kThreads, 0);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      const Dataset& ds = files[i];
      const void* owner = &files[i];
      for (int r = 0; r < kRounds; ++r) {
        table_.AddOpenFile(ds);
        table_.NoteWriteEnd(ds.id(), owner, 3, 0, 10);
        if (table_.ReportedSize(ds.id(), 10) != 3) ++wrong[i];
        table_.Touch(ds.id());
        if (table_.OpenHandles(ds.id()) != 1) ++wrong[i];
        if (!table_.EndAppend(ds.id(), owner)) ++wrong[i];
        table_.DropOpenFile(ds.id());
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) EXPECT_EQ(wrong[i], 0) << "thread " << i;
  EXPECT_EQ(table_.partial_rows(), 0);
}

}  // namespace
}  // namespace slabfs::fusefs
