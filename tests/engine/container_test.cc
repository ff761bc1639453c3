// The container API: namespace, datasets, attributes, persistence, bad
// input, locking and damaged files.
#include "slabfs/container.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <thread>

#include "engine/format/layout.h"
#include "engine/format/superblock.h"
#include "tests/testutil/mem_container.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs {
namespace {

using testutil::NewDisk;
using testutil::OpenOnDisk;

class ContainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    disk_ = NewDisk();
    auto c = OpenOnDisk(disk_);
    ASSERT_TRUE(c.has_value()) << c.error().ToString();
    c_ = std::move(*c);
  }
  void Reopen(bool read_only = false) {
    ASSERT_OK(c_->Close());
    c_.reset();
    auto c = OpenOnDisk(disk_, {.read_only = read_only});
    ASSERT_TRUE(c.has_value()) << c.error().ToString();
    c_ = std::move(*c);
  }
  std::vector<std::string> Names(std::string_view path) {
    std::vector<std::string> out;
    auto id = c_->Resolve(path);
    if (!id) return out;
    auto l = c_->List(*id);
    if (l)
      for (auto& e : *l) out.push_back(e.name);
    return out;
  }
  std::shared_ptr<testutil::Disk> disk_;
  std::unique_ptr<Container> c_;
};

TEST_F(ContainerTest, DatasetMessagesNameThePathNotAnId) {
  ASSERT_OK(c_->MakeGroups("/run"));
  ASSERT_OK_AND_ASSIGN(Dataset d,
                       c_->CreateDataset("/run/temp", {.dtype = DType::kI2, .shape = {4, 3}, .chunks = {2, 3}}));
  Status s = d.Resize({8, 3});
  EXPECT_EQ(s.code(), Code::kOutOfRange);
  EXPECT_EQ(s.message().find("/run/temp: dimension 0 cannot grow"), 0u) << s.message();
  // Renamed: the new path.
  ASSERT_OK(c_->Rename("/run/temp", "/run/t2"));
  s = d.Resize({8, 3});
  EXPECT_EQ(s.message().find("/run/t2: "), 0u) << s.message();
  // Opened again after a reopen (a state loaded from the file).
  Reopen();
  ASSERT_OK_AND_ASSIGN(Dataset again, c_->OpenDataset("/run/t2"));
  s = again.Resize({4, 9});
  EXPECT_EQ(s.message().find("/run/t2: dimension 1 cannot grow"), 0u) << s.message();
}

TEST_F(ContainerTest, CreatesNestedGroupsAndListsThemSorted) {
  ASSERT_OK(c_->MakeGroups("/b/x/y"));
  ASSERT_OK(c_->MakeGroups("/a"));
  ASSERT_OK(c_->MakeGroups("//c//"));
  EXPECT_EQ(Names("/"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(Names("/b/x"), (std::vector<std::string>{"y"}));
  Reopen();
  EXPECT_EQ(Names("/"), (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_OK_AND_ASSIGN(ObjectId y, c_->Resolve("/b/x/y"));
  ASSERT_OK_AND_ASSIGN(std::string p, c_->PathOf(y));
  EXPECT_EQ(p, "/b/x/y");
}

TEST_F(ContainerTest, MakeGroupsWithoutParentsNeedsTheParent) {
  EXPECT_CODE(c_->MakeGroups("/a/b", false), Code::kNotFound);
  ASSERT_OK(c_->MakeGroups("/a", false));
  EXPECT_CODE(c_->MakeGroups("/a", false), Code::kAlreadyExists);
  EXPECT_OK(c_->MakeGroups("/a", true));
}

TEST_F(ContainerTest, RejectsBadNames) {
  const std::string long_name(256, 'x');
  for (std::string bad :
       {std::string(""), std::string("."), std::string(".."), std::string("a/b"), long_name, std::string("a\0b", 3)}) {
    EXPECT_CODE(c_->CreateGroup(kRootId, bad), Code::kInvalidArgument);
    EXPECT_CODE(c_->CreateDataset(kRootId, bad, {.dtype = DType::kU1, .shape = {4}}), Code::kInvalidArgument);
    EXPECT_CODE(c_->SetAttribute(kRootId, bad, Attribute::String("v")), Code::kInvalidArgument);
  }
  EXPECT_CODE(c_->Resolve("relative/path"), Code::kInvalidArgument);
  EXPECT_CODE(c_->Resolve("/a/../b"), Code::kInvalidArgument);
  EXPECT_EQ(Names("/").size(), 0u);
  EXPECT_FALSE(c_->dirty());
}

TEST_F(ContainerTest, RejectsBadDatasetOptions) {
  auto make = [&](DatasetOptions o) { return c_->CreateDataset(kRootId, "d", o); };
  EXPECT_CODE(make({.dtype = DType::kF4, .shape = {}}), Code::kInvalidArgument);
  EXPECT_CODE(make({.dtype = DType::kF4, .shape = Dims(33, 1)}), Code::kInvalidArgument);
  EXPECT_CODE(make({.dtype = DType::kF4, .shape = {10, 0}}), Code::kInvalidArgument);
  EXPECT_CODE(make({.dtype = DType::kF4, .shape = {10, 10}, .chunks = {5}}), Code::kInvalidArgument);
  EXPECT_CODE(make({.dtype = DType::kF4, .shape = {10, 10}, .chunks = {5, 0}}), Code::kInvalidArgument);
  EXPECT_CODE(make({.dtype = DType::kF4, .shape = {10}, .fill = "ab"}), Code::kInvalidArgument);
  EXPECT_CODE(make({.dtype = DType::kF8, .shape = {1 << 20, 1 << 20}, .chunks = {1 << 15, 1 << 15}}),
              Code::kInvalidArgument);                                                                  // 8 GiB chunks
  EXPECT_CODE(make({.dtype = DType::kU8, .shape = {1ull << 40, 1ull << 40}}), Code::kInvalidArgument);  // > 2^63 bytes
  EXPECT_CODE(make({.dtype = static_cast<DType>(42), .shape = {4}}), Code::kInvalidArgument);
  // A maximum of 0 beside an unlimited dimension, chunks left to the
  // engine: refused (choosing chunks looped for ever).
  EXPECT_CODE(make({.dtype = DType::kF4, .shape = {2, 0}, .max_shape = {kUnlimited, 0}}), Code::kInvalidArgument);
  EXPECT_CODE(make({.dtype = DType::kU1, .shape = {0, 0}, .max_shape = {0, kUnlimited}}), Code::kInvalidArgument);
  EXPECT_EQ(Names("/").size(), 0u);
  EXPECT_FALSE(c_->dirty());
}

TEST_F(ContainerTest, ChoosesChunksWhenNoneAreGiven) {
  ASSERT_OK_AND_ASSIGN(Dataset d, c_->CreateDataset("/big", {.dtype = DType::kF4, .shape = {4000, 3000}}));
  DatasetInfo i = d.info();
  uint64_t bytes = 4;
  for (auto v : i.chunks) bytes *= v;
  EXPECT_LE(bytes, 1u << 20);
  EXPECT_GE(bytes, 1u << 18);
  EXPECT_EQ(i.index, IndexKind::kFixedArray);
}

TEST_F(ContainerTest, UnwrittenElementsReadAsFill) {
  ASSERT_OK_AND_ASSIGN(auto fill, EncodeScalar(DType::kI4, "-7"));
  ASSERT_OK_AND_ASSIGN(Dataset d,
                       c_->CreateDataset("/d", {.dtype = DType::kI4, .shape = {5, 7}, .chunks = {2, 3}, .fill = fill}));
  int32_t one = 42;
  ASSERT_OK(d.Write(Slab::Box({4, 6}, {1, 1}), &one));
  std::vector<int32_t> all(35);
  ASSERT_OK(d.ReadElements(0, 35, all.data()));
  for (int i = 0; i < 34; ++i) EXPECT_EQ(all[i], -7);
  EXPECT_EQ(all[34], 42);
  EXPECT_EQ(d.info().allocated_chunks, 1u);
  EXPECT_EQ(d.info().stored_bytes, 4u);  // the edge chunk holds one in-bounds element
}

TEST_F(ContainerTest, ByteViewReadsAndWritesPartialElements) {
  ASSERT_OK_AND_ASSIGN(Dataset d, c_->CreateDataset("/d", {.dtype = DType::kU4, .shape = {3, 5}, .chunks = {2, 2}}));
  std::vector<uint32_t> v(15);
  std::iota(v.begin(), v.end(), 0x01010101u);
  ASSERT_OK(d.WriteElements(0, 15, v.data()));
  std::string ref(reinterpret_cast<char*>(v.data()), 60);
  const char patch[] = "ABCDEFGHIJK";
  ASSERT_OK(d.WriteBytes(7, 11, patch));
  std::memcpy(ref.data() + 7, patch, 11);
  for (uint64_t off = 0; off <= 61; ++off)
    for (size_t len : {0, 1, 3, 5, 13, 60}) {
      std::string buf(len, '\0');
      ASSERT_OK_AND_ASSIGN(size_t n, d.ReadBytes(off, len, buf.data()));
      size_t expect = off >= 60 ? 0 : std::min<size_t>(len, 60 - off);
      ASSERT_EQ(n, expect);
      EXPECT_EQ(buf.substr(0, n), ref.substr(std::min<size_t>(off, 60), n)) << off << "+" << len;
    }
  EXPECT_CODE(d.WriteBytes(58, 3, "xyz"), Code::kOutOfRange);
  std::string after(60, '\0');
  ASSERT_OK(d.ReadBytes(0, 60, after.data()));
  EXPECT_EQ(after, ref);  // the refused write changed nothing
}

TEST_F(ContainerTest, RemoveNeedsEmptyGroups) {
  ASSERT_OK(c_->MakeGroups("/a/b"));
  EXPECT_CODE(c_->Remove("/a"), Code::kNotEmpty);
  ASSERT_OK(c_->Remove("/a/b"));
  ASSERT_OK(c_->Remove("/a"));
  EXPECT_CODE(c_->Remove("/a"), Code::kNotFound);
  EXPECT_CODE(c_->Remove("/"), Code::kInvalidArgument);
}

TEST_F(ContainerTest, RemovedDatasetSpaceIsReused) {
  std::vector<float> v(256 * 256, 1.5f);
  for (int round = 0; round < 5; ++round) {
    ASSERT_OK_AND_ASSIGN(Dataset d,
                         c_->CreateDataset("/d", {.dtype = DType::kF4, .shape = {256, 256}, .chunks = {64, 64}}));
    ASSERT_OK(d.Write(Slab::All({256, 256}), v.data()));
    ASSERT_OK(c_->Commit());
    ASSERT_OK(c_->Remove("/d"));
    ASSERT_OK(c_->Commit());
  }
  // Each round's 256 KiB is reused: the file never holds more than two
  // rounds' worth (the one being freed is reusable only after its commit).
  EXPECT_LT(c_->space().file_bytes, 3u * 256 * 256 * 4);
}

TEST_F(ContainerTest, RemovedDatasetStaysUsableThroughOpenHandle) {
  ASSERT_OK_AND_ASSIGN(Dataset d, c_->CreateDataset("/d", {.dtype = DType::kU2, .shape = {100}, .chunks = {10}}));
  std::vector<uint16_t> v(100, 7);
  ASSERT_OK(d.WriteElements(0, 100, v.data()));
  ASSERT_OK(c_->Commit());
  ASSERT_OK(c_->Remove("/d"));
  ASSERT_OK(c_->Commit());
  std::vector<uint16_t> r(100);
  ASSERT_OK(d.ReadElements(0, 100, r.data()));
  EXPECT_EQ(r, v);
  EXPECT_CODE(c_->Resolve("/d"), Code::kNotFound);
}

TEST_F(ContainerTest, RenameMovesAndReplacesLikeRename2) {
  ASSERT_OK(c_->MakeGroups("/g1/sub"));
  ASSERT_OK(c_->MakeGroups("/g2"));
  ASSERT_OK_AND_ASSIGN(Dataset a, c_->CreateDataset("/g1/a", {.dtype = DType::kU1, .shape = {4}}));
  ASSERT_OK(c_->CreateDataset("/g2/b", {.dtype = DType::kU1, .shape = {8}}));
  ASSERT_OK(c_->Rename("/g1/a", "/g2/b"));  // a dataset replaces a dataset
  ASSERT_OK_AND_ASSIGN(ObjectId b, c_->Resolve("/g2/b"));
  EXPECT_EQ(b, a.id());
  EXPECT_CODE(c_->Rename("/g1", "/g1/sub/x"), Code::kInvalidArgument);  // into itself
  EXPECT_CODE(c_->Rename("/g2/b", "/g1"), Code::kNotADataset);          // dataset over a group
  EXPECT_CODE(c_->Rename("/g2", "/g1"), Code::kNotEmpty);               // over a non-empty group
  ASSERT_OK_AND_ASSIGN(ObjectId g2, c_->Resolve("/g2"));
  ASSERT_OK_AND_ASSIGN(ObjectId g1, c_->Resolve("/g1"));
  EXPECT_CODE(c_->Rename(g2, "b", g1, "sub", true), Code::kAlreadyExists);
  ASSERT_OK(c_->Rename("/g1/sub", "/g2/moved"));
  Reopen();
  EXPECT_EQ(Names("/g2"), (std::vector<std::string>{"b", "moved"}));
  EXPECT_EQ(Names("/g1"), std::vector<std::string>{});
}

TEST_F(ContainerTest, AttributesRoundTripOnGroupsAndDatasets) {
  ASSERT_OK(c_->MakeGroups("/g"));
  ASSERT_OK_AND_ASSIGN(Dataset d, c_->CreateDataset("/g/d", {.dtype = DType::kU1, .shape = {4}}));
  ASSERT_OK_AND_ASSIGN(ObjectId g, c_->Resolve("/g"));
  ASSERT_OK(c_->SetAttribute(g, "title", Attribute::String("run 1")));
  ASSERT_OK(c_->SetAttribute(d.id(), "scale", Attribute::Float(2.5)));
  ASSERT_OK(c_->SetAttribute(d.id(), "dims", Attribute::FromText("1,2,3")));
  ASSERT_OK(c_->SetAttribute(d.id(), "note", Attribute::FromText("hello, world")));
  Reopen();
  ASSERT_OK_AND_ASSIGN(ObjectId d2, c_->Resolve("/g/d"));
  ASSERT_OK_AND_ASSIGN(auto names, c_->ListAttributes(d2));
  EXPECT_EQ(names, (std::vector<std::string>{"dims", "note", "scale"}));
  ASSERT_OK_AND_ASSIGN(Attribute dims, c_->GetAttribute(d2, "dims"));
  EXPECT_EQ(dims.kind, Attribute::Kind::kNumeric);
  EXPECT_EQ(dims.dtype, DType::kI8);
  EXPECT_EQ(dims.ToText(), "1,2,3");
  ASSERT_OK_AND_ASSIGN(Attribute scale, c_->GetAttribute(d2, "scale"));
  EXPECT_EQ(scale.ToText(), "2.5");
  ASSERT_OK_AND_ASSIGN(Attribute note, c_->GetAttribute(d2, "note"));
  EXPECT_EQ(note.kind, Attribute::Kind::kString);
  ASSERT_OK_AND_ASSIGN(Attribute title, c_->GetAttribute(g, "title"));
  EXPECT_EQ(title.data, "run 1");
  ASSERT_OK(c_->DeleteAttribute(d2, "note"));
  EXPECT_CODE(c_->GetAttribute(d2, "note"), Code::kNotFound);
  EXPECT_CODE(c_->DeleteAttribute(d2, "note"), Code::kNotFound);
  EXPECT_CODE(c_->SetAttribute(d2, "big", Attribute::String(std::string(kMaxAttributeBytes + 1, 'x'))),
              Code::kInvalidArgument);
  EXPECT_CODE(c_->SetAttribute(d2, "odd", Attribute::Numbers(DType::kF8, "abc")), Code::kInvalidArgument);
}

TEST_F(ContainerTest, ReadOnlyOpenRefusesEveryChange) {
  ASSERT_OK_AND_ASSIGN(Dataset d, c_->CreateDataset("/d", {.dtype = DType::kU1, .shape = {4}}));
  Reopen(/*read_only=*/true);
  ASSERT_OK_AND_ASSIGN(Dataset r, c_->OpenDataset("/d"));
  char buf[4] = {};
  EXPECT_OK(r.ReadElements(0, 4, buf));
  EXPECT_CODE(r.WriteElements(0, 4, buf), Code::kReadOnly);
  EXPECT_CODE(r.WriteBytes(0, 1, buf), Code::kReadOnly);
  EXPECT_CODE(r.Clear(), Code::kReadOnly);
  EXPECT_CODE(c_->MakeGroups("/x"), Code::kReadOnly);
  EXPECT_CODE(c_->CreateDataset("/e", {.dtype = DType::kU1, .shape = {4}}), Code::kReadOnly);
  EXPECT_CODE(c_->Remove("/d"), Code::kReadOnly);
  EXPECT_CODE(c_->Rename("/d", "/e"), Code::kReadOnly);
  EXPECT_CODE(c_->SetAttribute(kRootId, "a", Attribute::String("b")), Code::kReadOnly);
  EXPECT_CODE(c_->Commit(), Code::kReadOnly);
}

TEST_F(ContainerTest, ClearResetsToFillAndFreesChunks) {
  ASSERT_OK_AND_ASSIGN(
      Dataset d,
      c_->CreateDataset("/d", {.dtype = DType::kU1, .shape = {100}, .chunks = {10}, .fill = std::string(1, '\x09')}));
  std::string v(100, 'x');
  ASSERT_OK(d.WriteElements(0, 100, v.data()));
  ASSERT_OK(c_->Commit());
  EXPECT_EQ(d.info().allocated_chunks, 10u);
  ASSERT_OK(d.Clear());
  EXPECT_EQ(d.info().allocated_chunks, 0u);
  EXPECT_EQ(d.info().stored_bytes, 0u);
  Reopen();
  ASSERT_OK_AND_ASSIGN(Dataset d2, c_->OpenDataset("/d"));
  std::string r(100, '\0');
  ASSERT_OK(d2.ReadElements(0, 100, r.data()));
  EXPECT_EQ(r, std::string(100, '\x09'));
}

TEST_F(ContainerTest, UncommittedChangesAreNotDurable) {
  ASSERT_OK(c_->MakeGroups("/kept"));
  ASSERT_OK(c_->Commit());
  ASSERT_OK(c_->MakeGroups("/lost"));
  // Power loss now: only what was synced is on the disk.
  std::mt19937_64 rng(1);
  auto crashed = testutil::DiskWithImage(disk_->CrashImage(rng, 1.0, 0.0));
  ASSERT_OK_AND_ASSIGN(auto c2, OpenOnDisk(crashed, {.read_only = true}));
  EXPECT_OK(c2->Resolve("/kept"));
  EXPECT_CODE(c2->Resolve("/lost"), Code::kNotFound);
}

TEST_F(ContainerTest, CountsCacheHitsAndMisses) {
  ASSERT_OK_AND_ASSIGN(Dataset d,
                       c_->CreateDataset("/d", {.dtype = DType::kF4, .shape = {64, 64}, .chunks = {32, 32}}));
  std::vector<float> v(64 * 64, 3.f);
  ASSERT_OK(d.Write(Slab::All({64, 64}), v.data()));  // whole chunks: written straight through
  CacheStats s0 = c_->cache_stats();
  EXPECT_EQ(s0.bypass_writes, 4u);
  EXPECT_EQ(s0.bytes_written, 64u * 64 * 4);
  // A stored, unfiltered chunk is read straight from the file: a miss and a
  // bypass, reading only the selected bytes.
  float one;
  ASSERT_OK(d.Read(Slab::Box({0, 0}, {1, 1}), &one));
  CacheStats s1 = c_->cache_stats();
  EXPECT_EQ(s1.misses - s0.misses, 1u);
  EXPECT_EQ(s1.bypass_reads - s0.bypass_reads, 1u);
  EXPECT_EQ(s1.bytes_read - s0.bytes_read, 4u);
  EXPECT_EQ(one, 3.f);
  // A chunk being written is in the cache: reads of it are hits.
  float seven = 7.f;
  ASSERT_OK(d.Write(Slab::Box({40, 40}, {1, 1}), &seven));
  ASSERT_OK(d.Read(Slab::Box({40, 40}, {1, 1}), &one));
  CacheStats s2 = c_->cache_stats();
  EXPECT_EQ(s2.hits - s1.hits, 1u);
  EXPECT_EQ(one, 7.f);
}

TEST_F(ContainerTest, ConcurrentReadersSeeTheSameData) {
  ASSERT_OK_AND_ASSIGN(Dataset d,
                       c_->CreateDataset("/d", {.dtype = DType::kU4, .shape = {512, 512}, .chunks = {64, 64}}));
  std::vector<uint32_t> v(512 * 512);
  std::iota(v.begin(), v.end(), 0u);
  ASSERT_OK(d.WriteElements(0, v.size(), v.data()));
  ASSERT_OK(c_->Commit());
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < 200; ++i) {
        uint64_t r0 = rng() % 500, c0 = rng() % 500, nr = 1 + rng() % 12, nc = 1 + rng() % 12;
        std::vector<uint32_t> out(nr * nc);
        if (!d.Read(Slab::Box({r0, c0}, {nr, nc}), out.data()).ok()) ++bad;
        for (uint64_t r = 0; r < nr; ++r)
          for (uint64_t c = 0; c < nc; ++c)
            if (out[r * nc + c] != (r0 + r) * 512 + c0 + c) ++bad;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
}

// ---------------------------------------------------- real files

class ContainerFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("slabfs-test-" + std::to_string(getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "c.slab").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string ReadAll() {
    std::ifstream f(path_, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }
  void WriteAll(const std::string& s) {
    std::ofstream f(path_, std::ios::binary | std::ios::trunc);
    f << s;
  }
  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(ContainerFileTest, SecondWriterIsBusyAndNamesTheHolder) {
  ASSERT_OK_AND_ASSIGN(auto c, Container::Open(path_, {.create = true, .holder = "slabfs"}));
  auto second = Container::Open(path_);
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().code(), Code::kBusy);
  EXPECT_NE(second.error().message().find("slabfs (pid " + std::to_string(getpid())), std::string::npos)
      << second.error().message();
  // Read-only opens are not refused.
  EXPECT_OK(Container::Open(path_, {.read_only = true}));
  ASSERT_OK(c->Close());
  c.reset();
  EXPECT_OK(Container::Open(path_));
}

TEST_F(ContainerFileTest, CreateRefusesAnExistingFile) {
  WriteAll("precious");
  EXPECT_CODE(Container::Open(path_, {.create = true}), Code::kAlreadyExists);
  EXPECT_EQ(ReadAll(), "precious");
}

TEST_F(ContainerFileTest, MissingFileIsNotFound) {
  EXPECT_CODE(Container::Open(path_), Code::kNotFound);
  EXPECT_CODE(Container::Open(path_, {.read_only = true}), Code::kNotFound);
}

TEST_F(ContainerFileTest, OtherFilesAreNotContainers) {
  for (std::string content : {std::string(""), std::string("hello"), std::string(20000, 'z')}) {
    WriteAll(content);
    auto c = Container::Open(path_);
    ASSERT_FALSE(c.has_value());
    // Not damage: a file slabfs does not read (Python's OSError(ENOTSUP),
    // not EIO).
    EXPECT_EQ(c.error().code(), Code::kNotSupported);
    EXPECT_NE(c.error().message().find("not a slabfs container"), std::string::npos) << c.error().message();
    EXPECT_EQ(ReadAll(), content);  // untouched, not even the lock record
  }
}

TEST_F(ContainerFileTest, DamagedContainersAreCorruptionNotCrashes) {
  {
    ASSERT_OK_AND_ASSIGN(auto c, Container::Open(path_, {.create = true}));
    ASSERT_OK(c->MakeGroups("/a/b"));
    ASSERT_OK_AND_ASSIGN(Dataset d,
                         c->CreateDataset("/a/d", {.dtype = DType::kF8, .shape = {100, 100}, .chunks = {30, 30}}));
    std::vector<double> v(10000, 2.0);
    ASSERT_OK(d.WriteElements(0, 10000, v.data()));
    ASSERT_OK(c->Close());
  }
  const std::string good = ReadAll();
  // Every truncation.
  for (size_t len = 0; len < good.size(); len += std::max<size_t>(1, good.size() / 97)) {
    WriteAll(good.substr(0, len));
    auto c = Container::Open(path_, {.read_only = true});
    if (c) {
      // If it opened (the cut fell past everything referenced), reading all is fine or Corruption.
      auto d = (*c)->OpenDataset("/a/d");
      if (d) {
        std::vector<double> r(10000);
        Status s = d->ReadElements(0, 10000, r.data());
        EXPECT_TRUE(s.ok() || s.code() == Code::kCorruption) << s.ToString();
      }
    } else if (len < engine::kSuperblockBytes) {
      // Nothing of a superblock left (the empty file): not a container.
      EXPECT_EQ(c.error().code(), Code::kNotSupported) << len << ": " << c.error().ToString();
    } else {
      EXPECT_EQ(c.error().code(), Code::kCorruption) << len << ": " << c.error().ToString();
    }
  }
  // Flipped bytes in the metadata region (everything after the chunk data
  // and the superblocks): open fails cleanly or, if only the older slot or
  // unused bytes were hit, works.
  for (size_t pos = 0; pos < good.size(); pos += 37) {
    std::string bad = good;
    bad[pos] ^= 0x5a;
    WriteAll(bad);
    auto c = Container::Open(path_, {.read_only = true});
    if (!c) {
      EXPECT_TRUE(c.error().code() == Code::kCorruption || c.error().code() == Code::kNotSupported)
          << pos << ": " << c.error().ToString();
      continue;
    }
    auto d = (*c)->OpenDataset("/a/d");
    if (d) {
      std::vector<double> r(10000);
      Status s = d->ReadElements(0, 10000, r.data());
      EXPECT_TRUE(s.ok() || s.code() == Code::kCorruption) << pos << ": " << s.ToString();
    }
  }
  WriteAll(good);
  EXPECT_OK(Container::Open(path_));
}

TEST_F(ContainerFileTest, DamagedNewestSuperblockFallsBackToThePreviousCommit) {
  {
    ASSERT_OK_AND_ASSIGN(auto c, Container::Open(path_, {.create = true}));
    ASSERT_OK(c->MakeGroups("/first"));
    ASSERT_OK(c->Commit());  // generation 2, slot 0
    ASSERT_OK(c->MakeGroups("/second"));
    ASSERT_OK(c->Commit());  // generation 3, slot 1
    c->Discard();            // (a close would write generation 4, the same state)
  }
  std::string img = ReadAll();
  img[engine::kSuperblockSlot1 + 20] ^= 1;  // a torn write of the newest superblock
  WriteAll(img);
  ASSERT_OK_AND_ASSIGN(auto c, Container::Open(path_, {.read_only = true}));
  EXPECT_OK(c->Resolve("/first"));
  EXPECT_CODE(c->Resolve("/second"), Code::kNotFound);
}

TEST_F(ContainerFileTest, ACloseSaysTheLastSingleFlushCommitIsComplete) {
  {
    ASSERT_OK_AND_ASSIGN(auto c, Container::Open(path_, {.create = true}));
    ASSERT_OK(c->MakeGroups("/first"));
    ASSERT_OK(c->Commit());  // generation 2, slot 0, one fdatasync: its record lists what it wrote
    ASSERT_OK(c->Close());   // generation 3, slot 1: the same state, no record
  }
  std::string img = ReadAll();
  ASSERT_OK_AND_ASSIGN(engine::Superblock g2, engine::DecodeSuperblock(std::string_view(img).substr(
                                                  engine::kSuperblockSlot0, engine::kSuperblockSlotBytes)));
  ASSERT_OK_AND_ASSIGN(engine::Superblock g3, engine::DecodeSuperblock(std::string_view(img).substr(
                                                  engine::kSuperblockSlot1, engine::kSuperblockSlotBytes)));
  EXPECT_EQ(g2.generation, 2u);
  EXPECT_FALSE(g2.written.empty());
  EXPECT_EQ(g3.generation, 3u);
  EXPECT_TRUE(g3.written.empty());
  EXPECT_EQ(g3.root, g2.root);
  EXPECT_EQ(g3.free_list, g2.free_list);
  // A damaged block of that commit is now Corruption, not a commit cut short.
  img[g2.root.addr + g2.root.len / 2] ^= 0x20;
  WriteAll(img);
  auto c = Container::Open(path_, {.read_only = true});
  EXPECT_CODE(c, Code::kCorruption);
}

}  // namespace
}  // namespace slabfs

namespace slabfs {
namespace {

TEST(ContainerDiscardTest, DiscardDropsEverythingSinceTheLastCommit) {
  auto disk = testutil::NewDisk();
  {
    ASSERT_OK_AND_ASSIGN(auto c, testutil::OpenOnDisk(disk));
    ASSERT_OK(c->MakeGroups("/kept"));
    ASSERT_OK(c->Commit());
    ASSERT_OK(c->MakeGroups("/dropped"));
    ASSERT_OK_AND_ASSIGN(Dataset d,
                         c->CreateDataset("/kept/d", {.dtype = DType::kU1, .shape = {8192}, .chunks = {4096}}));
    std::string v(8192, 'q');
    ASSERT_OK(d.WriteElements(0, v.size(), v.data()));
    c->Discard();
  }
  ASSERT_OK_AND_ASSIGN(auto c, testutil::OpenOnDisk(disk, {.read_only = true}));
  EXPECT_OK(c->Resolve("/kept"));
  EXPECT_CODE(c->Resolve("/dropped"), Code::kNotFound);
  EXPECT_CODE(c->Resolve("/kept/d"), Code::kNotFound);
  EXPECT_STRNE(Version(), "");
}

}  // namespace
}  // namespace slabfs

namespace slabfs {
namespace {

TEST(WriteWithoutReadTest, RewritingAChunkPieceByPieceNeverReadsIt) {
  auto disk = testutil::NewDisk();
  std::vector<float> v(64 * 64);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  {
    ASSERT_OK_AND_ASSIGN(auto c, testutil::OpenOnDisk(disk));
    ASSERT_OK_AND_ASSIGN(Dataset d,
                         c->CreateDataset("/d", {.dtype = DType::kF4, .shape = {64, 64}, .chunks = {32, 32}}));
    ASSERT_OK(d.WriteElements(0, v.size(), v.data()));
    ASSERT_OK(c->Close());
  }
  ASSERT_OK_AND_ASSIGN(auto c, testutil::OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(Dataset d, c->OpenDataset("/d"));
  // Rewrite every row of the dataset, one row (two half chunk rows) at a time.
  for (uint64_t r = 0; r < 64; ++r) {
    std::vector<float> row(64, -static_cast<float>(r));
    ASSERT_OK(d.Write(Slab::Box({r, 0}, {1, 64}), row.data()));
    for (uint64_t q = 0; q < 64; ++q) v[r * 64 + q] = -static_cast<float>(r);
  }
  ASSERT_OK(c->Commit());
  EXPECT_EQ(c->cache_stats().bytes_read, 0u);
  std::vector<float> back(64 * 64);
  ASSERT_OK(d.ReadElements(0, back.size(), back.data()));
  EXPECT_EQ(back, v);
}

TEST(WriteWithoutReadTest, ReadingAnUnwrittenElementMergesTheStoredChunk) {
  auto disk = testutil::NewDisk();
  std::vector<uint16_t> v(100);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint16_t>(i * 3);
  {
    ASSERT_OK_AND_ASSIGN(auto c, testutil::OpenOnDisk(disk));
    ASSERT_OK_AND_ASSIGN(Dataset d, c->CreateDataset("/d", {.dtype = DType::kU2, .shape = {10, 10}, .chunks = {5, 5}}));
    ASSERT_OK(d.WriteElements(0, v.size(), v.data()));
    ASSERT_OK(c->Close());
  }
  ASSERT_OK_AND_ASSIGN(auto c, testutil::OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(Dataset d, c->OpenDataset("/d"));
  uint16_t x = 999;
  ASSERT_OK(d.Write(Slab::Box({1, 2}, {1, 1}), &x));  // one element of chunk (0,0)
  v[12] = 999;
  EXPECT_EQ(c->cache_stats().bytes_read, 0u);
  std::vector<uint16_t> block(25);
  ASSERT_OK(d.Read(Slab::Box({0, 0}, {5, 5}), block.data()));
  EXPECT_EQ(c->cache_stats().bytes_read, 25u * 2);  // the stored chunk, once
  for (int r = 0; r < 5; ++r)
    for (int q = 0; q < 5; ++q) EXPECT_EQ(block[r * 5 + q], v[r * 10 + q]);
  // And a write-back of a partial chunk (commit) merges too.
  ASSERT_OK(d.Write(Slab::Box({7, 7}, {1, 1}), &x));
  v[77] = 999;
  ASSERT_OK(c->Close());
  c.reset();
  ASSERT_OK_AND_ASSIGN(auto c2, testutil::OpenOnDisk(disk, {.read_only = true}));
  ASSERT_OK_AND_ASSIGN(Dataset d2, c2->OpenDataset("/d"));
  std::vector<uint16_t> all(100);
  ASSERT_OK(d2.ReadElements(0, 100, all.data()));
  EXPECT_EQ(all, v);
}

}  // namespace
}  // namespace slabfs

namespace slabfs {
namespace {

// Unfiltered chunks: a streaming pass (whole chunks, or each chunk read
// once in a small piece) goes straight from the file and leaves the cache
// empty; small reads that come back to a chunk, or a read across most of
// it, load it whole into the cache, and later reads of it are hits.
TEST_F(ContainerFileTest, UnfilteredChunksReadInPiecesAreCached) {
  {
    ASSERT_OK_AND_ASSIGN(auto c, Container::Open(path_, {.create = true}));
    ASSERT_OK_AND_ASSIGN(Dataset d,
                         c->CreateDataset("/d", {.dtype = DType::kI4, .shape = {64, 64}, .chunks = {16, 64}}));
    std::vector<int32_t> all(64 * 64);
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int32_t>(i);
    ASSERT_OK(d.Write(Slab::All({64, 64}), all.data()));
    ASSERT_OK(c->Close());
  }
  ASSERT_OK_AND_ASSIGN(auto ro, Container::Open(path_, {.read_only = true}));
  ASSERT_OK_AND_ASSIGN(Dataset d, ro->OpenDataset("/d"));
  std::vector<int32_t> buf(64 * 64);
  ASSERT_OK(d.Read(Slab::All({64, 64}), buf.data()));                                               // whole chunks
  for (uint64_t r = 0; r < 64; r += 16) ASSERT_OK(d.Read(Slab::Box({r, 0}, {1, 64}), buf.data()));  // once each
  EXPECT_EQ(ro->cache_stats().resident_bytes, 0u);
  EXPECT_EQ(ro->cache_stats().hits, 0u);
  // Back to chunk 1, row by row (rows 16..31): row 16 was read once above,
  // so reading it again loads the chunk, and the other 15 rows are hits.
  const CacheStats before = ro->cache_stats();
  for (uint64_t r = 16; r < 32; ++r) {
    ASSERT_OK(d.Read(Slab::Box({r, 0}, {1, 64}), buf.data()));
    for (uint64_t j = 0; j < 64; ++j) ASSERT_EQ(buf[j], static_cast<int32_t>(r * 64 + j));
  }
  const CacheStats after = ro->cache_stats();
  EXPECT_EQ(after.resident_bytes, 16u * 64 * 4);
  EXPECT_EQ(after.hits - before.hits, 15u);
  EXPECT_EQ(after.bypass_reads, before.bypass_reads);
  // A column crosses most of each chunk it touches: its first read loads
  // them (reading the span would cost as much), and the next columns hit.
  std::vector<int32_t> col(64);
  ASSERT_OK(d.Read(Slab::Box({0, 10}, {64, 1}), col.data()));
  for (uint64_t i = 0; i < 64; ++i) ASSERT_EQ(col[i], static_cast<int32_t>(i * 64 + 10));
  const CacheStats cols = ro->cache_stats();
  EXPECT_EQ(cols.resident_bytes, 4u * 16 * 64 * 4);
  EXPECT_EQ(cols.bypass_reads, after.bypass_reads);
  ASSERT_OK(d.Read(Slab::Box({0, 11}, {64, 1}), col.data()));
  EXPECT_EQ(ro->cache_stats().hits - cols.hits, 4u);
  EXPECT_EQ(col[63], 63 * 64 + 11);
}

// Reads from a real file, straight from the file (fresh opens) or through
// the cache, must match a reference across commits, rewrites, removals and
// the file being trimmed.
TEST_F(ContainerFileTest, DirectReadsMatchAReference) {
  ASSERT_OK_AND_ASSIGN(auto c, Container::Open(path_, {.create = true, .cache_bytes = 16384}));
  std::mt19937 rng(11);
  const Dims shape{37, 53};
  std::vector<int32_t> ref(37 * 53, 0);
  ASSERT_OK_AND_ASSIGN(Dataset d, c->CreateDataset("/d", {.dtype = DType::kI4, .shape = shape, .chunks = {8, 16}}));
  for (int round = 0; round < 30; ++round) {
    // A random box written, then random boxes read.
    uint64_t r0 = rng() % 37, c0 = rng() % 53;
    uint64_t nr = 1 + rng() % (37 - r0), nc = 1 + rng() % (53 - c0);
    std::vector<int32_t> w(nr * nc);
    for (auto& x : w) x = static_cast<int32_t>(rng());
    ASSERT_OK(d.Write(Slab::Box({r0, c0}, {nr, nc}), w.data()));
    for (uint64_t i = 0; i < nr; ++i)
      for (uint64_t j = 0; j < nc; ++j) ref[(r0 + i) * 53 + c0 + j] = w[i * nc + j];
    if (round % 3 == 0) {
      ASSERT_OK(c->Commit());
      // A second, read-only open has an empty cache: the first pass of
      // 5-row bands moves forward through the 8-row chunks and reads
      // straight from the file; the second comes back to them and loads
      // them whole into the cache, so both paths are checked.
      ASSERT_OK_AND_ASSIGN(auto ro, Container::Open(path_, {.read_only = true}));
      ASSERT_OK_AND_ASSIGN(Dataset rd, ro->OpenDataset("/d"));
      std::vector<int32_t> all(37 * 53);
      for (int pass = 0; pass < 2; ++pass) {
        for (uint64_t r = 0; r < 37; r += 5) {
          uint64_t n = std::min<uint64_t>(5, 37 - r);
          ASSERT_OK(rd.Read(Slab::Box({r, 3}, {n, 41}), all.data()));
          for (uint64_t i = 0; i < n; ++i)
            for (uint64_t j = 0; j < 41; ++j) ASSERT_EQ(all[i * 41 + j], ref[(r + i) * 53 + 3 + j]);
        }
      }
      EXPECT_GT(ro->cache_stats().bypass_reads, 0u);
      EXPECT_GT(ro->cache_stats().misses, ro->cache_stats().bypass_reads);  // some chunks were loaded whole
    }
    if (round % 7 == 0) {  // make and drop another dataset so the file grows and shrinks
      ASSERT_OK_AND_ASSIGN(Dataset t,
                           c->CreateDataset("/t", {.dtype = DType::kU1, .shape = {300000}, .chunks = {65536}}));
      std::string junk(300000, 'j');
      ASSERT_OK(t.WriteElements(0, junk.size(), junk.data()));
      ASSERT_OK(c->Commit());
      ASSERT_OK(c->Remove("/t"));
      ASSERT_OK(c->Commit());
    }
    for (int k = 0; k < 10; ++k) {
      uint64_t a0 = rng() % 37, b0 = rng() % 53;
      uint64_t na = 1 + rng() % (37 - a0), nb = 1 + rng() % (53 - b0);
      std::vector<int32_t> got(na * nb);
      ASSERT_OK(d.Read(Slab::Box({a0, b0}, {na, nb}), got.data()));
      for (uint64_t i = 0; i < na; ++i)
        for (uint64_t j = 0; j < nb; ++j) ASSERT_EQ(got[i * nb + j], ref[(a0 + i) * 53 + b0 + j]);
    }
  }
}

}  // namespace
}  // namespace slabfs

namespace slabfs {
namespace {

// Chunks larger than the staging buffers take the vectored paths; both
// paths give the same bytes.
TEST(LargeChunkTest, ReadsAndWritesOfChunksBeyondTheStagingSizeAreExact) {
  auto disk = testutil::NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, testutil::OpenOnDisk(disk));
  // One 6 MiB chunk of 1536 rows of 1 KiB.
  ASSERT_OK_AND_ASSIGN(Dataset d,
                       c->CreateDataset("/d", {.dtype = DType::kU4, .shape = {1536, 2048}, .chunks = {1536, 1024}}));
  std::vector<uint32_t> v(1536 * 1024);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint32_t>(i * 2654435761u);
  MemSpace mem{{1536, 1024}, Slab::All({1536, 1024})};
  ASSERT_OK(d.Write(Slab::Box({0, 512}, {1536, 1024}), v.data(), &mem));   // partial: through the cache
  ASSERT_OK(d.Write(Slab::Box({0, 1024}, {1536, 1024}), v.data(), &mem));  // whole chunk, 1536 runs
  ASSERT_OK(c->Commit());
  ASSERT_OK(c->Close());
  c.reset();
  ASSERT_OK_AND_ASSIGN(auto r, testutil::OpenOnDisk(disk, {.read_only = true}));
  ASSERT_OK_AND_ASSIGN(Dataset rd, r->OpenDataset("/d"));
  std::vector<uint32_t> got(1536 * 1024);
  ASSERT_OK(rd.Read(Slab::Box({0, 1024}, {1536, 1024}), got.data()));
  EXPECT_EQ(got, v);
  std::vector<uint32_t> part(1536 * 100);
  ASSERT_OK(rd.Read(Slab::Box({0, 600}, {1536, 100}), part.data()));  // 1536 short runs, 6 MiB span
  for (size_t i = 0; i < 1536; ++i)
    for (size_t j = 0; j < 100; ++j) ASSERT_EQ(part[i * 100 + j], v[i * 1024 + 88 + j]);
}

}  // namespace
}  // namespace slabfs

namespace slabfs {
namespace {

TEST_F(ContainerFileTest, CreateInAMissingDirectoryIsNotFoundAndLeavesNothing) {
  std::string p = (dir_ / "no" / "such" / "c.slab").string();
  auto missing = Container::Open(p, {.create = true});
  EXPECT_CODE(missing, Code::kNotFound);
  // The caller's name, not the temporary file's.
  if (!missing) {
    EXPECT_EQ(missing.error().message(), p + ": No such file or directory");
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "no"));
  // And a successful create leaves no temporary file beside the container.
  ASSERT_OK(Container::Open(path_, {.create = true}));
  size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1u);
}

TEST(LogLevelTest, RejectsUnknownLevels) {
  EXPECT_CODE(SetLogLevel("loud"), Code::kInvalidArgument);
  EXPECT_OK(SetLogLevel("off"));
  EXPECT_OK(SetLogLevel("warn"));
}

}  // namespace
}  // namespace slabfs

namespace slabfs {
namespace {

TEST(NewContainerTest, HoldsNoBlocksUntilItsFirstCommitAndThatLeavesNoHole) {
  auto disk = testutil::NewDisk();
  {
    // Packed, so that no alignment gap between blocks counts as free.
    ASSERT_OK_AND_ASSIGN(auto c, testutil::OpenOnDisk(disk, {.pack = true}));
    ASSERT_OK_AND_ASSIGN(auto list, c->List(kRootId));
    EXPECT_TRUE(list.empty());
    EXPECT_EQ(c->space().free_bytes, 0u);
    ASSERT_OK(c->MakeGroups("/a"));
    ASSERT_OK(c->SetAttribute(kRootId, "x", Attribute::Integer(1)));
    ASSERT_OK(c->Commit());
    // The empty root of a new container is no block, so nothing was freed.
    EXPECT_EQ(c->space().free_bytes, 0u);
  }
  ASSERT_OK_AND_ASSIGN(auto c, testutil::OpenOnDisk(disk, {.read_only = true}));
  ASSERT_OK_AND_ASSIGN(auto list, c->List(kRootId));
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].name, "a");
  ASSERT_OK_AND_ASSIGN(Attribute x, c->GetAttribute(kRootId, "x"));
  EXPECT_EQ(x.ToText(), "1");
}

TEST(NewContainerTest, PackedExtentsLeaveNoGaps) {
  // Chunks of 5,000 bytes (page-aligned unless packed: each leaves a gap)
  // and 36 bytes, and filtered ones of any size (packed either way).
  for (bool pack : {false, true}) {
    SCOPED_TRACE(pack);
    auto disk = testutil::NewDisk();
    ASSERT_OK_AND_ASSIGN(auto c, testutil::OpenOnDisk(disk, {.pack = pack}));
    ASSERT_OK_AND_ASSIGN(Dataset a,
                         c->CreateDataset("/a", {.dtype = DType::kU4, .shape = {100, 50}, .chunks = {25, 50}}));
    ASSERT_OK_AND_ASSIGN(Dataset b, c->CreateDataset("/b", {.dtype = DType::kU1, .shape = {360}, .chunks = {36}}));
    ASSERT_OK_AND_ASSIGN(
        Dataset f,
        c->CreateDataset(
            "/f", {.dtype = DType::kU2, .shape = {5000}, .chunks = {700}, .filters = "shuffle,deflate=6,checksum"}));
    std::vector<uint32_t> va(5000);
    for (size_t i = 0; i < va.size(); ++i) va[i] = static_cast<uint32_t>(i * 7);
    ASSERT_OK(a.WriteElements(0, va.size(), va.data()));
    std::vector<uint8_t> vb(360, 9);
    ASSERT_OK(b.WriteElements(0, vb.size(), vb.data()));
    std::vector<uint16_t> vf(5000);
    for (size_t i = 0; i < vf.size(); ++i) vf[i] = static_cast<uint16_t>(i % 300);
    ASSERT_OK(f.WriteElements(0, vf.size(), vf.data()));
    ASSERT_OK(c->Commit());
    if (pack) {
      EXPECT_EQ(c->space().free_bytes, 0u);
    } else {
      EXPECT_GT(c->space().free_bytes, 0u);
    }
    ASSERT_OK(c->Close());
    ASSERT_OK_AND_ASSIGN(auto r, testutil::OpenOnDisk(disk, {.read_only = true}));
    ASSERT_OK_AND_ASSIGN(Dataset a2, r->OpenDataset("/a"));
    std::vector<uint32_t> got(5000);
    ASSERT_OK(a2.ReadElements(0, got.size(), got.data()));
    EXPECT_EQ(got, va);
    ASSERT_OK_AND_ASSIGN(Dataset f2, r->OpenDataset("/f"));
    std::vector<uint16_t> gotf(5000);
    ASSERT_OK(f2.ReadElements(0, gotf.size(), gotf.data()));
    EXPECT_EQ(gotf, vf);
  }
}

}  // namespace
}  // namespace slabfs
