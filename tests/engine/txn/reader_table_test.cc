// The reader table: read-only opens register the generation they read as a
// shared lock on the real container file, and the writer finds the oldest
// one; the writer's own lock byte is apart from them.
#include "engine/txn/reader_table.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <filesystem>
#include <string>
#include <vector>

#include "engine/format/layout.h"
#include "engine/io/file.h"
#include "engine/io/writer_lock.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::engine {
namespace {

class ReaderTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "slabfs-readers-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/c.slab";
    ASSERT_OK_AND_ASSIGN(writer_, OpenPosixFile(path_, {.writable = true, .create = true}));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<File> OpenReader() {
    auto f = OpenPosixFile(path_, {});
    EXPECT_TRUE(f.has_value());
    return f ? std::move(*f) : nullptr;
  }

  // A `newest` that answers the given generations in turn (then the last).
  static std::function<Result<uint64_t>()> Answers(std::vector<uint64_t> gens) {
    auto i = std::make_shared<size_t>(0);
    return [gens, i]() -> Result<uint64_t> {
      uint64_t g = gens[std::min(*i, gens.size() - 1)];
      ++*i;
      return g;
    };
  }

  std::string dir_, path_;
  std::unique_ptr<File> writer_;
};

TEST_F(ReaderTableTest, TheWriterFindsTheOldestRegisteredGeneration) {
  auto fa = OpenReader(), fb = OpenReader();
  ReaderSlot a(fa.get()), b(fb.get());
  ASSERT_OK_AND_ASSIGN(uint64_t ga, a.HoldNewest(Answers({7})));
  ASSERT_OK_AND_ASSIGN(uint64_t gb, b.HoldNewest(Answers({9})));
  EXPECT_EQ(ga, 7u);
  EXPECT_EQ(gb, 9u);
  EXPECT_EQ(OldestReader(writer_.get(), 20).value(), 7u);
  // Only generations below `below` count.
  EXPECT_EQ(OldestReader(writer_.get(), 8).value(), 7u);
  EXPECT_EQ(OldestReader(writer_.get(), 7).value(), UINT64_MAX);
  a.Release();
  EXPECT_EQ(OldestReader(writer_.get(), 20).value(), 9u);
  b.Release();
  EXPECT_EQ(OldestReader(writer_.get(), 20).value(), UINT64_MAX);
}

TEST_F(ReaderTableTest, AReaderThatDiesLeavesTheTable) {
  // Another process registers generation 4 and is then killed: its lock
  // goes with it, with nobody cleaning up.
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto f = OpenPosixFile(path_, {});
    ReaderSlot slot(f ? f->get() : nullptr);
    const bool held = f && slot.HoldNewest(Answers({4})).has_value();
    const char c = held ? 'y' : 'n';
    (void)!write(ready[1], &c, 1);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  EXPECT_EQ(OldestReader(writer_.get(), 20).value(), 4u);
  kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(OldestReader(writer_.get(), 20).value(), UINT64_MAX);
  close(ready[0]);
  close(ready[1]);
}

TEST_F(ReaderTableTest, FindsTheLowestAmongManyReaders) {
  std::vector<std::unique_ptr<File>> files;
  std::vector<std::unique_ptr<ReaderSlot>> slots;
  for (uint64_t g : {40, 12, 33, 12, 90, 15}) {
    files.push_back(OpenReader());
    slots.push_back(std::make_unique<ReaderSlot>(files.back().get()));
    ASSERT_OK(slots.back()->HoldNewest(Answers({g})));
  }
  EXPECT_EQ(OldestReader(writer_.get(), 100).value(), 12u);
  slots[1]->Release();
  EXPECT_EQ(OldestReader(writer_.get(), 100).value(), 12u);  // another reader of 12
  slots[3]->Release();
  EXPECT_EQ(OldestReader(writer_.get(), 100).value(), 15u);
}

TEST_F(ReaderTableTest, RegistersOnlyAGenerationThatIsStillTheNewest) {
  // The writer committed twice while the reader registered: it ends on the
  // generation that the superblocks still name after its lock was taken.
  auto f = OpenReader();
  ReaderSlot slot(f.get());
  ASSERT_OK_AND_ASSIGN(uint64_t g, slot.HoldNewest(Answers({3, 4, 5, 5})));
  EXPECT_EQ(g, 5u);
  EXPECT_EQ(OldestReader(writer_.get(), 100).value(), 5u) << "no lock left on 3 or 4";
}

TEST_F(ReaderTableTest, MovingToANewerGenerationKeepsTheOldOneUntilKeep) {
  auto f = OpenReader();
  ReaderSlot slot(f.get());
  ASSERT_OK(slot.HoldNewest(Answers({3})));
  ASSERT_OK(slot.HoldNewest(Answers({8})));
  EXPECT_EQ(OldestReader(writer_.get(), 100).value(), 3u);
  slot.Keep(8);
  EXPECT_EQ(OldestReader(writer_.get(), 100).value(), 8u);
  // Holding what is already held changes nothing.
  ASSERT_OK_AND_ASSIGN(uint64_t g, slot.HoldNewest(Answers({8})));
  EXPECT_EQ(g, 8u);
  slot.Keep(3);  // not held: releases 8
  EXPECT_EQ(OldestReader(writer_.get(), 100).value(), UINT64_MAX);
}

TEST_F(ReaderTableTest, ReadersAndTheWriterLockDoNotMeet) {
  auto f = OpenReader();
  ReaderSlot slot(f.get());
  ASSERT_OK(slot.HoldNewest(Answers({1})));
  ASSERT_OK(AcquireWriterLock(writer_.get(), std::chrono::milliseconds(0)));
  EXPECT_TRUE(WriterPresent(f.get()).value());
  // A second writer is refused, readers or not.
  auto other = OpenPosixFile(path_, {.writable = true});
  ASSERT_TRUE(other.has_value());
  EXPECT_CODE(AcquireWriterLock(other->get(), std::chrono::milliseconds(0)), Code::kBusy);
  // More readers register while the writer holds its lock.
  auto g = OpenReader();
  ReaderSlot late(g.get());
  ASSERT_OK(late.HoldNewest(Answers({2})));
  EXPECT_EQ(OldestReader(writer_.get(), 100).value(), 1u);
}

TEST_F(ReaderTableTest, ANewestThatFailsIsTheAnswer) {
  auto f = OpenReader();
  ReaderSlot slot(f.get());
  auto failing = []() -> Result<uint64_t> { return Err(Status::Corruption("no superblock")); };
  EXPECT_CODE(slot.HoldNewest(failing), Code::kCorruption);
  EXPECT_EQ(OldestReader(writer_.get(), 100).value(), UINT64_MAX);
}

}  // namespace
}  // namespace slabfs::engine
