// Readers that follow a writer, on real files: a read-only open keeps
// reading exactly its commit while a writer rewrites everything, Refresh
// moves it to the newest commit (shapes, contents, names, attributes), a
// writer that opens later still honours older readers, and space is reused
// once readers have moved on. Also a stress run with reader processes.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "slabfs/container.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs {
namespace {

class RefreshTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "slabfs-refresh-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/c.slab";
    auto w = Container::Open(path_, {.create = true, .cache_bytes = 1 << 20});
    ASSERT_TRUE(w.has_value()) << w.error().ToString();
    writer_ = std::move(*w);
  }
  void TearDown() override {
    writer_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<Container> OpenReader() {
    auto r = Container::Open(path_, {.read_only = true});
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r ? std::move(*r) : nullptr;
  }

  uint64_t FileBytes() const { return std::filesystem::file_size(path_); }

  // Every element of `ds` set to `v`.
  static void Fill(Dataset& ds, uint32_t v) {
    std::vector<uint32_t> buf(ds.num_elements(), v);
    ASSERT_OK(ds.WriteElements(0, buf.size(), buf.data()));
  }
  // Whether every element of `ds` is `v`.
  static void ExpectAll(const Dataset& ds, uint32_t v) {
    std::vector<uint32_t> buf(ds.num_elements());
    ASSERT_OK(ds.ReadElements(0, buf.size(), buf.data()));
    EXPECT_EQ(std::count(buf.begin(), buf.end(), v), static_cast<std::ptrdiff_t>(buf.size()))
        << "expected every element to be " << v << ", the first is " << (buf.empty() ? 0 : buf[0]);
  }

  std::string dir_, path_;
  std::unique_ptr<Container> writer_;
};

DatasetOptions U4(Dims shape, Dims chunks, std::string filters = "") {
  DatasetOptions o;
  o.dtype = DType::kU4;
  o.shape = std::move(shape);
  o.chunks = std::move(chunks);
  o.filters = std::move(filters);
  return o;
}

TEST_F(RefreshTest, AReaderKeepsItsCommitWhileTheWriterRewritesEverything) {
  ASSERT_OK_AND_ASSIGN(Dataset d, writer_->CreateDataset("/d", U4({256, 256}, {32, 32})));
  ASSERT_OK_AND_ASSIGN(Dataset z, writer_->CreateDataset("/z", U4({256, 256}, {64, 64}, "shuffle,deflate=1,checksum")));
  Fill(d, 1);
  Fill(z, 1);
  ASSERT_OK(writer_->Commit());
  auto reader = OpenReader();
  ASSERT_OK_AND_ASSIGN(Dataset rd, reader->OpenDataset("/d"));
  ASSERT_OK_AND_ASSIGN(Dataset rz, reader->OpenDataset("/z"));
  for (uint32_t v = 2; v < 40; ++v) {
    // Everything rewritten and committed, and datasets made and removed, so
    // that freed space would be reused at once without the reader.
    Fill(d, v);
    Fill(z, v);
    ASSERT_OK_AND_ASSIGN(Dataset t, writer_->CreateDataset("/t" + std::to_string(v), U4({64, 64}, {64, 64})));
    Fill(t, v);
    if (v > 2) ASSERT_OK(writer_->Remove("/t" + std::to_string(v - 1)));
    ASSERT_OK(writer_->Commit());
    ExpectAll(rd, 1);
    ExpectAll(rz, 1);
  }
  // The reader's chunks are held back, and only they: not the 37 rewrites
  // made after its commit (engine/space/allocator.h).
  EXPECT_GE(writer_->space().held_bytes, 256u * 256 * 4) << "the reader's chunks are held back";
  EXPECT_LT(writer_->space().held_bytes, 2u * 256 * 256 * 4) << "only the reader's chunks";
  // The reader leaves: its space is reused from the next commit on.
  reader.reset();
  Fill(d, 99);
  ASSERT_OK(writer_->Commit());
  EXPECT_EQ(writer_->space().held_bytes, 0u);
  const uint64_t size = FileBytes();
  for (uint32_t v = 100; v < 110; ++v) {
    Fill(d, v);
    Fill(z, v);
    ASSERT_OK(writer_->Commit());
  }
  EXPECT_LE(FileBytes(), size) << "rewrites reuse the freed space";
}

TEST_F(RefreshTest, RefreshShowsTheNewestCommit) {
  DatasetOptions grow = U4({4, 8}, {2, 8});
  grow.max_shape = {kUnlimited, 8};
  ASSERT_OK(writer_->MakeGroups("/g"));
  ASSERT_OK(writer_->MakeGroups("/h"));
  ASSERT_OK_AND_ASSIGN(Dataset s, writer_->CreateDataset("/g/stream", grow));
  ASSERT_OK_AND_ASSIGN(Dataset old, writer_->CreateDataset("/old", U4({10}, {5})));
  ASSERT_OK_AND_ASSIGN(Dataset same, writer_->CreateDataset("/h/same", U4({10}, {5})));
  Fill(s, 5);
  Fill(old, 6);
  Fill(same, 7);
  ASSERT_OK(writer_->SetAttribute(kRootId, "run", Attribute::Integer(1)));
  ASSERT_OK(writer_->Commit());

  auto reader = OpenReader();
  ASSERT_OK_AND_ASSIGN(Dataset rs, reader->OpenDataset("/g/stream"));
  ASSERT_OK_AND_ASSIGN(Dataset rold, reader->OpenDataset("/old"));
  ASSERT_OK_AND_ASSIGN(Dataset rsame, reader->OpenDataset("/h/same"));
  const uint64_t first = reader->space().generation;

  // Nothing new yet.
  ASSERT_OK_AND_ASSIGN(RefreshInfo none, reader->Refresh());
  EXPECT_FALSE(none.changed);
  EXPECT_EQ(none.generation, first);

  ASSERT_OK(s.Resize({10, 8}));
  Fill(s, 8);
  ASSERT_OK(writer_->Remove("/old"));
  ASSERT_OK_AND_ASSIGN(Dataset added, writer_->CreateDataset("/g/new", U4({3}, {3})));
  Fill(added, 9);
  ASSERT_OK(writer_->Rename("/h", "/h2"));
  ASSERT_OK(writer_->SetAttribute(kRootId, "run", Attribute::Integer(2)));
  ASSERT_OK(writer_->Commit());

  // The reader still sees its commit until it refreshes.
  EXPECT_EQ(rs.info().shape, (Dims{4, 8}));
  ExpectAll(rs, 5);
  EXPECT_CODE(reader->Resolve("/g/new"), Code::kNotFound);

  ASSERT_OK_AND_ASSIGN(RefreshInfo info, reader->Refresh());
  EXPECT_TRUE(info.changed);
  EXPECT_GT(info.generation, first);
  EXPECT_EQ(reader->space().generation, info.generation);
  // Handles follow: the stream grew and holds the new values.
  EXPECT_EQ(rs.info().shape, (Dims{10, 8}));
  ExpectAll(rs, 8);
  // A dataset that is gone answers NotFound through its handle and by name.
  std::vector<uint32_t> buf(10);
  EXPECT_CODE(rold.ReadElements(0, 10, buf.data()), Code::kNotFound);
  EXPECT_CODE(reader->Resolve("/old"), Code::kNotFound);
  EXPECT_TRUE(std::binary_search(info.removed_objects.begin(), info.removed_objects.end(), rold.id()));
  // New names and attributes.
  ASSERT_OK_AND_ASSIGN(Dataset rnew, reader->OpenDataset("/g/new"));
  ExpectAll(rnew, 9);
  EXPECT_TRUE(std::binary_search(info.changed_objects.begin(), info.changed_objects.end(), rnew.id()));
  ASSERT_OK_AND_ASSIGN(Attribute run, reader->GetAttribute(kRootId, "run"));
  EXPECT_EQ(run.ToText(), "2");
  // A renamed group's unchanged dataset is the same object, unchanged.
  EXPECT_CODE(reader->Resolve("/h/same"), Code::kNotFound);
  ASSERT_OK_AND_ASSIGN(ObjectId moved, reader->Resolve("/h2/same"));
  EXPECT_EQ(moved, rsame.id());
  ExpectAll(rsame, 7);
  EXPECT_FALSE(std::binary_search(info.changed_objects.begin(), info.changed_objects.end(), rsame.id()));
  EXPECT_TRUE(std::binary_search(info.changed_objects.begin(), info.changed_objects.end(), kRootId));
  // The names that no longer lead where they did: the removed dataset and
  // the renamed group; not the unchanged dataset inside it.
  std::vector<std::string> dropped;
  for (const RefreshInfo::Name& n : info.dropped_names) {
    EXPECT_EQ(n.parent, kRootId);
    dropped.push_back(n.name);
  }
  std::sort(dropped.begin(), dropped.end());
  EXPECT_EQ(dropped, (std::vector<std::string>{"h", "old"}));
}

TEST_F(RefreshTest, AWriterThatOpensLaterHonoursOlderReaders) {
  ASSERT_OK_AND_ASSIGN(Dataset d, writer_->CreateDataset("/d", U4({128, 128}, {16, 16})));
  Fill(d, 1);
  ASSERT_OK(writer_->Commit());
  auto reader = OpenReader();
  ASSERT_OK_AND_ASSIGN(Dataset rd, reader->OpenDataset("/d"));
  Fill(d, 2);
  ASSERT_OK(writer_->Close());  // the chunks of value 1 are freed, tagged, held
  writer_.reset();
  for (uint32_t v = 3; v < 10; ++v) {
    ASSERT_OK_AND_ASSIGN(auto w, Container::Open(path_, {.cache_bytes = 1 << 20}));
    ASSERT_OK_AND_ASSIGN(Dataset wd, w->OpenDataset("/d"));
    EXPECT_GT(w->space().held_bytes, 0u);
    Fill(wd, v);
    ASSERT_OK(w->Close());
    ExpectAll(rd, 1);
  }
  ASSERT_OK_AND_ASSIGN(RefreshInfo info, reader->Refresh());
  EXPECT_TRUE(info.changed);
  ExpectAll(rd, 9);
}

TEST_F(RefreshTest, SpaceStaysBoundedWhileAReaderFollows) {
  ASSERT_OK_AND_ASSIGN(Dataset d, writer_->CreateDataset("/d", U4({512, 512}, {64, 64})));
  Fill(d, 0);
  ASSERT_OK(writer_->Commit());
  auto reader = OpenReader();
  ASSERT_OK_AND_ASSIGN(Dataset rd, reader->OpenDataset("/d"));
  const uint64_t data = 512 * 512 * 4;
  uint64_t largest = 0;
  for (uint32_t v = 1; v <= 40; ++v) {
    Fill(d, v);
    ASSERT_OK(writer_->Commit());
    ASSERT_OK(reader->Refresh());
    ExpectAll(rd, v);
    largest = std::max(largest, FileBytes());
  }
  // The reader pins at most the commit before the newest: about three
  // copies of the data at any time, however many commits.
  EXPECT_LT(largest, 4 * data) << "file grew to " << largest;
}

TEST_F(RefreshTest, AReuseDelayHoldsFreedSpaceEvenWithoutReaders) {
  // For readers on hosts the locks do not reach (network filesystems).
  ASSERT_OK_AND_ASSIGN(Dataset d, writer_->CreateDataset("/d", U4({64, 64}, {16, 16})));
  Fill(d, 1);
  ASSERT_OK(writer_->Commit());
  writer_.reset();
  ASSERT_OK_AND_ASSIGN(auto w, Container::Open(path_, {.reuse_delay_seconds = 3600}));
  ASSERT_OK_AND_ASSIGN(Dataset wd, w->OpenDataset("/d"));
  Fill(wd, 2);
  ASSERT_OK(w->Commit());
  EXPECT_GE(w->space().held_bytes, 64u * 64 * 4);
  w.reset();
  // Without the delay (a local filesystem's default), the same is free.
  ASSERT_OK_AND_ASSIGN(auto w2, Container::Open(path_, {.reuse_delay_seconds = 0}));
  EXPECT_EQ(w2->space().held_bytes, 0u);
}

TEST_F(RefreshTest, AWritableContainerRefreshesToItself) {
  ASSERT_OK_AND_ASSIGN(RefreshInfo info, writer_->Refresh());
  EXPECT_FALSE(info.changed);
  EXPECT_EQ(info.generation, writer_->space().generation);
}

// One writer commits continuously; reader processes refresh and check that
// every commit they see is whole: each dataset holds the version the root
// attribute names, the stream as many rows as versions. Any Corruption, a
// torn commit or a wrong value fails the run.
TEST_F(RefreshTest, ReaderProcessesFollowAWriterUnderLoad) {
  DatasetOptions stream = U4({0, 64}, {16, 64});
  stream.max_shape = {kUnlimited, 64};
  ASSERT_OK_AND_ASSIGN(Dataset d, writer_->CreateDataset("/dense", U4({128, 128}, {32, 32})));
  ASSERT_OK_AND_ASSIGN(Dataset z,
                       writer_->CreateDataset("/filtered", U4({128, 128}, {32, 32}, "shuffle,deflate=1,checksum")));
  DatasetOptions sp = U4({128, 128}, {32, 32});
  sp.sparse = true;
  ASSERT_OK_AND_ASSIGN(Dataset s, writer_->CreateDataset("/sparse", sp));
  ASSERT_OK_AND_ASSIGN(Dataset st, writer_->CreateDataset("/stream", stream));
  ASSERT_OK(writer_->SetAttribute(kRootId, "version", Attribute::Integer(0)));
  Fill(d, 0);
  Fill(z, 0);
  ASSERT_OK(writer_->Commit());

  const auto run_for = std::chrono::seconds(3);
  constexpr int kReaders = 4;
  std::vector<pid_t> readers;
  for (int i = 0; i < kReaders; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid != 0) {
      readers.push_back(pid);
      continue;
    }
    // A reader: exit status 0 when every commit it saw was right.
    int code = 0;
    uint64_t seen = 0;
    auto r = Container::Open(path_, {.read_only = true, .cache_bytes = 1 << 20});
    if (!r) _exit(10);
    const auto until = std::chrono::steady_clock::now() + run_for + std::chrono::milliseconds(500);
    std::vector<uint32_t> buf(128 * 128);
    while (code == 0 && std::chrono::steady_clock::now() < until) {
      auto info = (*r)->Refresh();
      if (!info) {
        code = 11;
        break;
      }
      auto ver = (*r)->GetAttribute(kRootId, "version");
      if (!ver) {
        code = 12;
        break;
      }
      const uint32_t v = static_cast<uint32_t>(std::stoul(ver->ToText()));
      for (const char* name : {"/dense", "/filtered", "/sparse"}) {
        auto ds = (*r)->OpenDataset(name);
        if (!ds || !ds->ReadElements(0, buf.size(), buf.data()).ok()) {
          code = 13;
          break;
        }
        // The sparse dataset defines only row v % 128 (others read as 0).
        for (size_t k = 0; k < buf.size() && code == 0; ++k) {
          uint32_t want = v;
          if (std::string(name) == "/sparse") want = (k / 128 == v % 128) ? v : 0;
          if (buf[k] != want) code = 14;
        }
      }
      auto sd = (*r)->OpenDataset("/stream");
      if (!sd || sd->info().shape[0] != v) {
        code = 15;
        break;
      }
      if (v > 0) {
        std::vector<uint32_t> row(64);
        if (!sd->Read(Slab::Box({v - 1, 0}, {1, 64}), row.data()).ok()) {
          code = 16;
          break;
        }
        if (row[0] != v - 1 || row[63] != v - 1) code = 17;
      }
      ++seen;
    }
    if (code == 0 && seen < 5) code = 18;
    _exit(code);
  }

  const auto until = std::chrono::steady_clock::now() + run_for;
  uint32_t v = 0;
  uint64_t largest = 0;
  while (std::chrono::steady_clock::now() < until) {
    ++v;
    Fill(d, v);
    Fill(z, v);
    ASSERT_OK(s.Erase(Slab::All({128, 128})));
    std::vector<uint32_t> row(128, v);
    ASSERT_OK(s.Write(Slab::Box({v % 128, 0}, {1, 128}), row.data()));
    ASSERT_OK(st.Resize({v, 64}));
    std::vector<uint32_t> srow(64, v - 1);
    ASSERT_OK(st.Write(Slab::Box({v - 1, 0}, {1, 64}), srow.data()));
    ASSERT_OK(writer_->SetAttribute(kRootId, "version", Attribute::Integer(v)));
    ASSERT_OK(writer_->Commit());
    largest = std::max(largest, FileBytes());
  }
  for (pid_t pid : readers) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status)) << "reader " << pid << " died";
    EXPECT_EQ(WEXITSTATUS(status), 0) << "reader " << pid << " saw a bad commit (see the codes)";
  }
  EXPECT_GT(v, 10u);
  // Readers pin the commits they are reading, a few each (how many depends
  // on how far behind a busy machine lets them fall): space is bounded by
  // some copies of the live data, not by the number of commits (each
  // rewrites about 200 KB; a leak would be that times the commits).
  const uint64_t live = 3 * 128 * 128 * 4 + v * 64 * 4;
  EXPECT_LT(largest, 32 * live + (1 << 20)) << v << " commits, file up to " << largest;
  // Once the readers are gone, nothing is held and rewrites reuse space.
  Fill(d, v + 1);
  ASSERT_OK(writer_->Commit());
  EXPECT_EQ(writer_->space().held_bytes, 0u);
  const uint64_t settled = FileBytes();
  for (uint32_t k = 0; k < 50; ++k) {
    Fill(d, k);
    Fill(z, k);
    ASSERT_OK(writer_->Commit());
  }
  // Within one copy of what a commit rewrites (where the free space left
  // at `settled` lies can make a new copy land past its end once; a leak
  // would be that times the 50 commits).
  EXPECT_LE(FileBytes(), settled + 128 * 128 * 4);
}

}  // namespace
}  // namespace slabfs
