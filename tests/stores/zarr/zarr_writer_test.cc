// The Zarr store's writer (stores/zarr/zarr_writer.h) on small stores
// written here: writes of boxes across chunk edges compared with a plain
// array in memory, through the same store and through a store opened
// afresh (what another reader finds on disk); chunks holding only the fill
// value removed; the cache never serving a replaced chunk; resizing along
// the first dimension; attributes and groups in the metadata files; two
// threads writing one chunk losing nothing; bad input refused with the
// store unchanged. What zarr-python reads of stores written this way is
// checked by tests/integration/test_mount_zarr_write.py.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "slabfs/store.h"
#include "slabfs/store_writer.h"
#include "stores/zarr/zarr_store.h"
#include "stores/zarr/zarr_writer.h"
#include "tests/testutil/status_matchers.h"
#include "tools/convert/zarr_json.h"

namespace slabfs::stores {
namespace {

namespace fs = std::filesystem;

void WriteText(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

std::string ReadText(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class ZarrWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/slabfs-zarrwrite-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    root_ = dir_ / "s.zarr";
    fs::create_directories(root_);
    WriteText(root_ / ".zgroup", R"({"zarr_format": 2})");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // A v2 array of i4 of `rows` x 7 in chunks of 4 x 3, fill value -1,
  // with the given compressor JSON ("null" for none), no chunks stored.
  void MakeArray(const std::string& name, uint64_t rows, const std::string& compressor, const std::string& fill = "-1",
                 const std::string& sep = ".") {
    fs::create_directories(root_ / name);
    WriteText(root_ / name / ".zarray",
              R"({"zarr_format": 2, "shape": [)" + std::to_string(rows) +
                  R"(, 7], "chunks": [4, 3], "dtype": "<i4", "compressor": )" + compressor + R"(, "fill_value": )" +
                  fill + R"(, "filters": null, "order": "C", "dimension_separator": ")" + sep + R"("})");
  }

  std::unique_ptr<Store> Open(bool writable = true) {
    auto s = OpenZarrStore(root_.string(), {.cache_bytes = 1 << 20, .writable = writable});
    EXPECT_TRUE(s.has_value()) << (s ? "" : s.error().ToString());
    if (!s) std::abort();
    return std::move(*s);
  }

  static std::shared_ptr<WritableStoreDataset> Writable(Store& s, const std::string& path) {
    auto id = s.Resolve(path);
    EXPECT_TRUE(id.has_value());
    auto ds = s.writer()->OpenDatasetForWriting(*id);
    EXPECT_TRUE(ds.has_value());
    return *ds;
  }

  // Changes every kind of metadata document of /a's store through the
  // writer: /a grows to 13 rows, gets the attribute units=m, and a group g
  // is made under the root.
  static void ChangeEveryDocument(Store& store, WritableStoreDataset& a) {
    ASSERT_OK(a.Resize(13));
    auto id = store.Resolve("/a");
    ASSERT_TRUE(id.has_value());
    ASSERT_OK(store.writer()->SetAttribute(*id, "units", Attribute::String("m")));
    ASSERT_TRUE(store.writer()->CreateGroup(kRootId, "g").has_value());
  }

  // Writes 0, 1, 2, ... into the first `rows` rows (of 7) of `ds` and
  // returns them.
  static std::vector<int32_t> WriteCount(WritableStoreDataset& ds, uint64_t rows) {
    std::vector<int32_t> all(rows * 7);
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int32_t>(i);
    EXPECT_OK(ds.Write(Slab::Box({0, 0}, {rows, 7}), all.data()));
    return all;
  }

  static std::vector<int32_t> ReadAll(const Store& s, const std::string& path) {
    auto ds = s.OpenDataset(path);
    EXPECT_TRUE(ds.has_value());
    const DatasetInfo d = (*ds)->info().dataset;
    std::vector<int32_t> out(d.num_elements);
    EXPECT_OK((*ds)->ReadElements(0, d.num_elements, out.data()));
    return out;
  }

  fs::path dir_, root_;
};

TEST_F(ZarrWriterTest, WritesBoxesAcrossChunksAsAPlainArrayHoldsThem) {
  for (const char* compressor : {"null", R"({"id": "zlib", "level": 3})",
                                 R"({"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0})",
                                 R"({"id": "gzip", "level": 1})"}) {
    SCOPED_TRACE(compressor);
    std::error_code ec;
    fs::remove_all(root_ / "a", ec);
    MakeArray("a", 10, compressor);
    auto store = Open();
    auto ds = Writable(*store, "/a");
    std::vector<int32_t> model(70, -1);
    // Boxes that start and end inside chunks, one covering a whole chunk.
    struct Case {
      Dims start, count;
    };
    int32_t v = 100;
    for (const Case& c : {Case{{1, 2}, {5, 4}}, Case{{4, 3}, {4, 3}}, Case{{9, 0}, {1, 7}}, Case{{0, 6}, {10, 1}}}) {
      std::vector<int32_t> buf(c.count[0] * c.count[1]);
      for (auto& x : buf) x = v++;
      ASSERT_OK(ds->Write(Slab::Box(c.start, c.count), buf.data()));
      for (uint64_t i = 0; i < c.count[0]; ++i)
        for (uint64_t j = 0; j < c.count[1]; ++j)
          model[(c.start[0] + i) * 7 + c.start[1] + j] = buf[i * c.count[1] + j];
      EXPECT_EQ(ReadAll(*store, "/a"), model);
    }
    // What another reader of the directory finds.
    EXPECT_EQ(ReadAll(*Open(false), "/a"), model);
    // No temporary file is left.
    for (const auto& e : fs::directory_iterator(root_ / "a")) {
      EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
    }
  }
}

TEST_F(ZarrWriterTest, ReplacedChunksAreNotServedFromTheCache) {
  MakeArray("a", 8, R"({"id": "zlib", "level": 1})");
  auto store = Open();
  auto ds = Writable(*store, "/a");
  std::vector<int32_t> ones(56, 1), got(56);
  ASSERT_OK(ds->Write(Slab::Box({0, 0}, {8, 7}), ones.data()));
  // A partial read caches the chunk; the write replaces it.
  int32_t one = 0;
  ASSERT_OK(ds->Read(Slab::Box({1, 1}, {1, 1}), &one));
  EXPECT_EQ(one, 1);
  const int32_t seven = 7;
  ASSERT_OK(ds->Write(Slab::Box({1, 1}, {1, 1}), &seven));
  ASSERT_OK(ds->Read(Slab::Box({1, 1}, {1, 1}), &one));
  EXPECT_EQ(one, 7);
  auto other = store->OpenDataset("/a");
  ASSERT_TRUE(other.has_value());
  ASSERT_OK((*other)->Read(Slab::Box({0, 0}, {2, 2}), got.data()));
  EXPECT_EQ(got[3], 7);
}

TEST_F(ZarrWriterTest, ChunksHoldingOnlyTheFillValueAreRemoved) {
  MakeArray("a", 8, "null");
  MakeArray("nullfill", 8, "null", "null");
  auto store = Open();
  for (const char* name : {"/a", "/nullfill"}) {
    auto ds = Writable(*store, name);
    std::vector<int32_t> v(12, 5);
    ASSERT_OK(ds->Write(Slab::Box({0, 0}, {4, 3}), v.data()));
    EXPECT_EQ(ds->info().dataset.allocated_chunks, 1u);
    std::fill(v.begin(), v.end(), std::string(name) == "/a" ? -1 : 0);
    ASSERT_OK(ds->Write(Slab::Box({0, 0}, {4, 3}), v.data()));
    const bool exists = fs::exists(root_ / (std::string(name).substr(1)) / "0.0");
    if (std::string(name) == "/a") {
      EXPECT_FALSE(exists);  // fill_value -1: a missing chunk reads as it
      EXPECT_EQ(ds->info().dataset.allocated_chunks, 0u);
    } else {
      EXPECT_TRUE(exists);  // fill_value null: zarr-python needs the chunk
    }
  }
}

TEST_F(ZarrWriterTest, NestedKeysGetTheirDirectories) {
  MakeArray("n", 9, "null", "0", "/");
  auto store = Open();
  auto ds = Writable(*store, "/n");
  const int32_t x = 42;
  ASSERT_OK(ds->Write(Slab::Box({8, 6}, {1, 1}), &x));
  EXPECT_TRUE(fs::is_regular_file(root_ / "n" / "2" / "2"));
  auto again = ReadAll(*Open(false), "/n");
  EXPECT_EQ(again[8 * 7 + 6], 42);
}

TEST_F(ZarrWriterTest, ResizesAlongTheFirstDimension) {
  MakeArray("a", 10, R"({"id": "zlib", "level": 1})");
  auto store = Open();
  auto ds = Writable(*store, "/a");
  const std::vector<int32_t> all = WriteCount(*ds, 10);
  EXPECT_TRUE(fs::exists(root_ / "a" / "2.0"));
  // Shrink to 5 rows: the last chunk row goes, row 4 of chunk row 1 stays.
  ASSERT_OK(ds->Resize(5));
  EXPECT_FALSE(fs::exists(root_ / "a" / "2.0"));
  EXPECT_NE(ReadText(root_ / "a" / ".zarray").find("5,"), std::string::npos);
  // Growing again: the cut rows read as the fill value, not as before.
  ASSERT_OK(ds->Resize(9));
  std::vector<int32_t> want(all.begin(), all.begin() + 35);
  want.resize(63, -1);
  EXPECT_EQ(ReadAll(*store, "/a"), want);
  EXPECT_EQ(ReadAll(*Open(false), "/a"), want);
  // The byte view: whole rows only, writes past the end grow.
  EXPECT_CODE(ds->SetSizeBytes(9 * 28 + 4), Code::kInvalidArgument);
  ASSERT_OK(ds->SetSizeBytes(2 * 28));
  const int32_t tail[2] = {77, 78};
  auto n = ds->WriteBytesUpTo(3 * 28 - 4, 8, tail, /*grow_rows=*/true);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(*n, 8u);
  EXPECT_EQ(ds->info().dataset.shape, (Dims{4, 7}));
  auto got = ReadAll(*Open(false), "/a");
  ASSERT_EQ(got.size(), 28u);
  EXPECT_EQ(got[20], 77);
  EXPECT_EQ(got[21], 78);
  EXPECT_EQ(got[22], -1);
}

TEST_F(ZarrWriterTest, AShrinkThatMeetsADamagedChunkChangesNothing) {
  // An exploratory tester's find: the truncate answered EIO for a damaged
  // chunk of the row it cuts, but the shape was rewritten and the chunk
  // rows past it removed already.
  MakeArray("a", 10, R"({"id": "zlib", "level": 1})");
  auto store = Open();
  auto ds = Writable(*store, "/a");
  const std::vector<int32_t> all = WriteCount(*ds, 10);
  const std::string zarray = ReadText(root_ / "a" / ".zarray");
  WriteText(root_ / "a" / "1.1", "not a zlib stream");
  EXPECT_CODE(ds->Resize(5), Code::kCorruption);  // cuts chunk row 1, whose chunk 1.1 is damaged
  EXPECT_EQ(ReadText(root_ / "a" / ".zarray"), zarray);
  EXPECT_TRUE(fs::exists(root_ / "a" / "2.0"));
  EXPECT_EQ(ds->info().dataset.shape, (Dims{10, 7}));
  // A shrink to whole chunk rows cuts no chunk: it goes through.
  ASSERT_OK(ds->Resize(4));
  EXPECT_FALSE(fs::exists(root_ / "a" / "1.1"));
  EXPECT_EQ(ReadAll(*Open(false), "/a"), std::vector<int32_t>(all.begin(), all.begin() + 28));
}

TEST_F(ZarrWriterTest, AttributesTheStoreWouldNotShowAgainAreRefused) {
  // An exploratory tester's find: a value that is not UTF-8 went into
  // .zattrs with U+FFFD in place of its bytes, and a name with a '/' was
  // written and then hidden when the store was opened again.
  MakeArray("a", 4, "null");
  auto store = Open();
  auto id = store->Resolve("/a");
  ASSERT_TRUE(id.has_value());
  const std::string zattrs_before = fs::exists(root_ / "a" / ".zattrs") ? ReadText(root_ / "a" / ".zattrs") : "";
  EXPECT_CODE(store->writer()->SetAttribute(*id, "bin",
                                            Attribute::String(std::string("\x00\xff\x80\xfe"
                                                                          "A",
                                                                          5))),
              Code::kInvalidArgument);
  EXPECT_CODE(store->writer()->SetAttribute(*id, "a/b", Attribute::String("x")), Code::kInvalidArgument);
  EXPECT_EQ(fs::exists(root_ / "a" / ".zattrs") ? ReadText(root_ / "a" / ".zattrs") : "", zattrs_before);
  // UTF-8 text, NUL bytes and all, is kept.
  ASSERT_OK(store->writer()->SetAttribute(*id, "text", Attribute::String(std::string("caf\xc3\xa9\x00!", 7))));
  auto reopened = Open(false);
  auto rid = reopened->Resolve("/a");
  ASSERT_TRUE(rid.has_value());
  auto got = reopened->GetAttribute(*rid, "text");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->data, std::string("caf\xc3\xa9\x00!", 7));
}

TEST_F(ZarrWriterTest, PartialElementsAreMerged) {
  MakeArray("a", 4, "null", "0");
  auto store = Open();
  auto ds = Writable(*store, "/a");
  const char bytes[3] = {'\x11', '\x22', '\x33'};
  auto n = ds->WriteBytesUpTo(6, 3, bytes, false);  // bytes 2,3 of element 1, byte 0 of element 2
  ASSERT_TRUE(n.has_value());
  auto got = ReadAll(*store, "/a");
  EXPECT_EQ(static_cast<uint32_t>(got[1]), 0x22110000u);
  EXPECT_EQ(static_cast<uint32_t>(got[2]), 0x33u);
  // Past the end of a fixed view without growth: refused.
  EXPECT_FALSE(ds->WriteBytesUpTo(28 * 4, 4, bytes, false).has_value());
}

TEST_F(ZarrWriterTest, TwoThreadsWritingOneChunkLoseNothing) {
  MakeArray("a", 4, R"({"id": "zlib", "level": 1})", "0");
  auto store = Open();
  auto ds = Writable(*store, "/a");
  // Thread t writes the elements of chunk (0, 0) with column parity t, one
  // element at a time: each write reads, merges and replaces the chunk.
  auto writer = [&](int t) {
    for (int round = 0; round < 20; ++round)
      for (uint64_t i = 0; i < 4; ++i)
        for (uint64_t j = static_cast<uint64_t>(t); j < 3; j += 2) {
          const int32_t v = 1000 * (t + 1) + round;
          ASSERT_OK(ds->Write(Slab::Box({i, j}, {1, 1}), &v));
        }
  };
  std::thread a(writer, 0), b(writer, 1);
  a.join();
  b.join();
  auto got = ReadAll(*Open(false), "/a");
  for (uint64_t i = 0; i < 4; ++i)
    for (uint64_t j = 0; j < 3; ++j) EXPECT_EQ(got[i * 7 + j], 1000 * (j % 2 + 1) + 19) << i << "," << j;
}

TEST_F(ZarrWriterTest, AttributesAndGroupsGoToTheMetadataFiles) {
  MakeArray("a", 4, "null");
  auto store = Open();
  StoreWriter* w = store->writer();
  ASSERT_NE(w, nullptr);
  ASSERT_OK(w->SetAttribute(kRootId, "title", Attribute::String("run")));
  auto a = store->Resolve("/a");
  ASSERT_TRUE(a.has_value());
  ASSERT_OK(w->SetAttribute(*a, "units", Attribute::String("K")));
  EXPECT_NE(ReadText(root_ / ".zattrs").find("\"title\": \"run\""), std::string::npos);
  EXPECT_NE(ReadText(root_ / "a" / ".zattrs").find("\"units\": \"K\""), std::string::npos);
  auto g = w->CreateGroup(kRootId, "g");
  ASSERT_TRUE(g.has_value());
  EXPECT_TRUE(fs::exists(root_ / "g" / ".zgroup"));
  ASSERT_OK(w->SetAttribute(*g, "n", Attribute::String("1")));
  ASSERT_OK(w->RemoveAttribute(*a, "units"));
  EXPECT_CODE(w->RemoveAttribute(*a, "units"), Code::kNotFound);
  ASSERT_OK(w->Sync());
  // The tree shows it, and so does the store opened again.
  EXPECT_EQ(store->GetAttribute(kRootId, "title")->ToText(), "run");
  auto again = Open(false);
  EXPECT_EQ(again->GetAttribute(kRootId, "title")->ToText(), "run");
  EXPECT_TRUE(again->Resolve("/g").has_value());
  EXPECT_FALSE(again->GetAttribute(*again->Resolve("/a"), "units").has_value());
  // Bad input.
  EXPECT_CODE(w->CreateGroup(kRootId, "g"), Code::kAlreadyExists);
  EXPECT_CODE(w->CreateGroup(kRootId, "a"), Code::kAlreadyExists);
  EXPECT_CODE(w->CreateGroup(kRootId, ".hidden"), Code::kInvalidArgument);
  EXPECT_CODE(w->CreateGroup(*a, "x"), Code::kNotAGroup);
  EXPECT_CODE(w->SetAttribute(*a, "_slab_max_shape", Attribute::String("[1]")), Code::kNotSupported);
  EXPECT_CODE(w->SetAttribute(999, "x", Attribute::String("1")), Code::kNotFound);
}

TEST_F(ZarrWriterTest, BadInputIsRefusedAndChangesNothing) {
  MakeArray("a", 8, R"({"id": "zlib", "level": 1})");
  auto store = Open();
  auto ds = Writable(*store, "/a");
  std::vector<int32_t> v(56, 3);
  ASSERT_OK(ds->Write(Slab::Box({0, 0}, {8, 7}), v.data()));
  const std::string before = ReadText(root_ / "a" / "0.0");
  EXPECT_CODE(ds->Write(Slab::Box({7, 0}, {2, 7}), v.data()), Code::kInvalidArgument);
  EXPECT_CODE(ds->Write(Slab::Box({0}, {1}), v.data()), Code::kInvalidArgument);
  // A damaged chunk cannot be merged into: Corruption, and it stays as it was.
  std::string damaged = before;
  damaged[damaged.size() / 2] ^= 0x5a;
  WriteText(root_ / "a" / "0.0", damaged);
  auto fresh = Open();
  auto ds2 = Writable(*fresh, "/a");
  const int32_t x = 9;
  EXPECT_CODE(ds2->Write(Slab::Box({1, 1}, {1, 1}), &x), Code::kCorruption);
  EXPECT_EQ(ReadText(root_ / "a" / "0.0"), damaged);
  // A whole chunk needs no merge, and replaces the damaged one.
  std::vector<int32_t> chunk(12, 4);
  ASSERT_OK(ds2->Write(Slab::Box({0, 0}, {4, 3}), chunk.data()));
  EXPECT_EQ(ReadAll(*Open(false), "/a")[0], 4);
  // A 0-d array cannot change its length.
  fs::create_directories(root_ / "s");
  WriteText(root_ / "s" / ".zarray",
            R"({"zarr_format": 2, "shape": [], "chunks": [], "dtype": "<f8", "compressor": null,
                "fill_value": 0.0, "filters": null, "order": "C"})");
  auto with_scalar = Open();
  auto s = Writable(*with_scalar, "/s");
  EXPECT_CODE(s->Resize(2), Code::kInvalidArgument);
  const double pi = 3.25;
  ASSERT_OK(s->Write(Slab::Box({0}, {1}), &pi));
  EXPECT_TRUE(fs::exists(root_ / "s" / "0"));
}

TEST_F(ZarrWriterTest, ARootArrayHasNoGroupToChange) {
  fs::remove_all(root_);
  fs::create_directories(root_);
  WriteText(root_ / ".zarray",
            R"({"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<i4", "compressor": null,
                "fill_value": 0, "filters": null, "order": "C"})");
  auto store = Open();
  EXPECT_CODE(store->writer()->SetAttribute(kRootId, "x", Attribute::String("1")), Code::kNotSupported);
  EXPECT_CODE(store->writer()->CreateGroup(kRootId, "g"), Code::kNotSupported);
  auto ds = Writable(*store, "/s");
  const int32_t v = 5;
  ASSERT_OK(ds->Write(Slab::Box({3}, {1}), &v));
  EXPECT_TRUE(fs::exists(root_ / "1"));
}

TEST(ZarrReadOnlyReasonTest, NamesACodecThatDecodesButCannotBeEncoded) {
  // No codec the store reads is decode-only today; the trial encode at
  // open is what would find one, as it finds a blosc compressor missing.
  tools::convert::ZarrArray a;
  a.dtype = DType::kI4;
  EXPECT_EQ(ZarrReadOnlyReason(a), "");
  tools::convert::ZarrCodec zlib;
  zlib.kind = tools::convert::ZarrCodec::Kind::kZlib;
  a.codecs.push_back(zlib);
  EXPECT_EQ(ZarrReadOnlyReason(a), "");
  tools::convert::ZarrCodec blosc;
  blosc.kind = tools::convert::ZarrCodec::Kind::kBlosc;
  blosc.cname = "nosuch";
  blosc.typesize = 4;
  a.codecs.push_back(blosc);
  const std::string why = ZarrReadOnlyReason(a);
  EXPECT_NE(why.find("zlib,blosc(nosuch)"), std::string::npos) << why;
  EXPECT_NE(why.find("cannot be encoded"), std::string::npos) << why;
}

TEST_F(ZarrWriterTest, AStoreOpenedReadOnlyHasNoWriter) {
  MakeArray("a", 4, "null");
  EXPECT_EQ(Open(false)->writer(), nullptr);
}

// A directory whose fsync fails stays noted: the next SyncAll tries it
// again, and the failure is returned.
TEST(ZarrDirtyDirsTest, AFailedFsyncIsRetriedByTheNextSync) {
  char tmpl[] = "/tmp/slabfs-dirtydirs-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  int calls = 0;
  bool fail = true;
  DirtyDirs dirty([&](int) {
    ++calls;
    if (fail) {
      errno = EIO;
      return -1;
    }
    return 0;
  });
  dirty.Add(dir);
  EXPECT_FALSE(dirty.SyncAll().ok());
  EXPECT_EQ(calls, 1);
  fail = false;
  EXPECT_OK(dirty.SyncAll());
  EXPECT_EQ(calls, 2);
  EXPECT_OK(dirty.SyncAll());  // synced: not tried again
  EXPECT_EQ(calls, 2);
  fs::remove_all(dir);
}

// A second SyncAll while the first is still fsyncing returns only after
// it; when the first one's fsync fails, the second tries the directory
// again (and reports its own result) instead of finding nothing to do.
TEST(ZarrDirtyDirsTest, ASecondSyncWaitsForTheFirstAndRetriesItsFailure) {
  char tmpl[] = "/tmp/slabfs-dirtydirs-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::mutex mu;
  std::condition_variable cv;
  bool in_first = false, release = false;
  std::atomic<int> calls{0};
  DirtyDirs dirty([&](int) {
    if (calls.fetch_add(1) == 0) {
      std::unique_lock lock(mu);
      in_first = true;
      cv.notify_all();
      cv.wait(lock, [&] { return release; });
      errno = EIO;
      return -1;
    }
    return 0;
  });
  dirty.Add(dir);
  Status first_result, second_result;
  std::thread first([&] { first_result = dirty.SyncAll(); });
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return in_first; });
  }
  std::atomic<bool> second_done{false};
  std::thread second([&] {
    second_result = dirty.SyncAll();
    second_done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(second_done.load()) << "the second Sync returned while the first was still fsyncing";
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  first.join();
  second.join();
  EXPECT_FALSE(first_result.ok());
  EXPECT_OK(second_result);
  EXPECT_EQ(calls.load(), 2);  // the second call fsynced the directory again
  fs::remove_all(dir);
}

// A shrink interrupted after the new shape was written leaves chunk files
// past the end, which readers ignore; a later grow must not bring their
// rows back.
TEST_F(ZarrWriterTest, GrowingDoesNotBringBackChunksLeftPastTheEnd) {
  MakeArray("a", 10, "null");  // chunk rows 0..2 of 4 rows
  std::vector<int32_t> stale(12, 5);
  std::string bytes(reinterpret_cast<const char*>(stale.data()), stale.size() * 4);
  WriteText(root_ / "a" / "3.0", bytes);  // rows 12..15, as a crash leaves it
  WriteText(root_ / "a" / "4.2", bytes);  // rows 16..19
  auto store = Open();
  auto ds = Writable(*store, "/a");
  EXPECT_EQ(ReadAll(*store, "/a"), std::vector<int32_t>(70, -1));
  ASSERT_OK(ds->Resize(20));
  EXPECT_FALSE(fs::exists(root_ / "a" / "3.0"));
  EXPECT_FALSE(fs::exists(root_ / "a" / "4.2"));
  EXPECT_EQ(ReadAll(*store, "/a"), std::vector<int32_t>(140, -1));
  EXPECT_EQ(ReadAll(*Open(false), "/a"), std::vector<int32_t>(140, -1));
}

// A chunk file the store did not list when it opened (another program's)
// is removed when the chunk comes to hold only the fill value, not left to
// be read as data.
TEST_F(ZarrWriterTest, AFillChunkRemovesAFileTheStoreDidNotList) {
  MakeArray("a", 8, "null", "0");
  auto store = Open();
  auto ds = Writable(*store, "/a");
  std::vector<int32_t> stale(12, 5);
  WriteText(root_ / "a" / "1.1", std::string(reinterpret_cast<const char*>(stale.data()), stale.size() * 4));
  const std::vector<int32_t> zeros(12, 0);
  ASSERT_OK(ds->Write(Slab::Box({4, 3}, {4, 3}), zeros.data()));
  EXPECT_FALSE(fs::exists(root_ / "a" / "1.1"));
  EXPECT_EQ(ReadAll(*Open(false), "/a"), std::vector<int32_t>(56, 0));
}

// A store with consolidated metadata (.zmetadata, as `slab export` and
// zarr.consolidate_metadata write it) has it updated with every metadata
// document the writer rewrites; one that cannot be parsed is removed.
TEST_F(ZarrWriterTest, ConsolidatedMetadataFollowsTheDocuments) {
  MakeArray("a", 10, "null");
  WriteText(root_ / ".zmetadata", R"({"metadata": {".zgroup": {"zarr_format": 2}, "a/.zarray": )" +
                                      ReadText(root_ / "a" / ".zarray") + R"(}, "zarr_consolidated_format": 1})");
  auto store = Open();
  auto ds = Writable(*store, "/a");
  ASSERT_NO_FATAL_FAILURE(ChangeEveryDocument(*store, *ds));
  std::string z = ReadText(root_ / ".zmetadata");
  for (const char* want : {"\"a/.zarray\"", "13,", "\"a/.zattrs\"", "\"units\": \"m\"", "\"g/.zgroup\"",
                           "\"zarr_consolidated_format\": 1", "\".zgroup\""}) {
    EXPECT_NE(z.find(want), std::string::npos) << want << " not in " << z;
  }
  EXPECT_EQ(z.find("10,"), std::string::npos) << z;
  // Not JSON: removed rather than left stale.
  WriteText(root_ / ".zmetadata", "{not json");
  ASSERT_OK(ds->Resize(14));
  EXPECT_FALSE(fs::exists(root_ / ".zmetadata"));
  // No consolidated metadata: none is made.
  ASSERT_OK(ds->Resize(15));
  EXPECT_FALSE(fs::exists(root_ / ".zmetadata"));
}

// A size whose byte count would reach 2^63 is refused and changes nothing;
// the maximum shape an export recorded cannot be removed by hand, as it
// cannot be set.
TEST_F(ZarrWriterTest, OverflowingSizesAndTheMaxShapeAttributeAreRefused) {
  MakeArray("a", 10, "null");
  MakeArray("b", 10, "null");
  const std::string attrs =
      std::string(R"({"x": 1, ")") + std::string(tools::convert::kMaxShapeAttribute) + R"(": [20, 7]})";
  WriteText(root_ / "b" / ".zattrs", attrs);
  const std::string zarray = ReadText(root_ / "a" / ".zarray");
  auto store = Open();
  auto ds = Writable(*store, "/a");
  // 28 bytes a row.
  for (uint64_t rows : {UINT64_MAX, uint64_t{INT64_MAX} / 28 + 1, uint64_t{1} << 62}) {
    SCOPED_TRACE(rows);
    Status s = ds->Resize(rows);
    EXPECT_FALSE(s.ok());
    EXPECT_TRUE(s.code() == Code::kOutOfRange || s.code() == Code::kInvalidArgument) << s.ToString();
  }
  EXPECT_EQ(ds->info().dataset.shape, (Dims{10, 7}));
  EXPECT_EQ(ReadText(root_ / "a" / ".zarray"), zarray);
  ASSERT_OK(ds->Resize(uint64_t{INT64_MAX} / 28));  // the largest that fits
  EXPECT_EQ(ds->info().dataset.shape, (Dims{uint64_t{INT64_MAX} / 28, 7}));
  ASSERT_OK(ds->Resize(3));
  auto id = store->Resolve("/b");
  ASSERT_TRUE(id.has_value());
  EXPECT_CODE(store->writer()->RemoveAttribute(*id, tools::convert::kMaxShapeAttribute), Code::kNotSupported);
  EXPECT_EQ(ReadText(root_ / "b" / ".zattrs"), attrs);
  ASSERT_OK(store->writer()->RemoveAttribute(*id, "x"));
  EXPECT_NE(ReadText(root_ / "b" / ".zattrs").find(tools::convert::kMaxShapeAttribute), std::string::npos);
}

// The same for a v3 store: the entry of each node in the root zarr.json's
// "consolidated_metadata", the rest of the root document kept.
TEST_F(ZarrWriterTest, V3ConsolidatedMetadataFollowsTheDocuments) {
  fs::remove(root_ / ".zgroup");
  const std::string array = R"({"zarr_format": 3, "node_type": "array", "shape": [10, 7], "data_type": "int32",
    "fill_value": -1, "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 3]}},
    "chunk_key_encoding": {"name": "default"}, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    "attributes": {}})";
  fs::create_directories(root_ / "a");
  WriteText(root_ / "a" / "zarr.json", array);
  WriteText(root_ / "zarr.json", R"({"zarr_format": 3, "node_type": "group", "attributes": {"t": 1},
    "consolidated_metadata": {"kind": "inline", "must_understand": false, "metadata": {"a": )" +
                                     array + "}}}");
  auto store = Open();
  auto ds = Writable(*store, "/a");
  ASSERT_NO_FATAL_FAILURE(ChangeEveryDocument(*store, *ds));
  ASSERT_OK(store->writer()->SetAttribute(kRootId, "note", Attribute::String("n")));
  auto root = tools::convert::ReadJsonFile((root_ / "zarr.json").string());
  ASSERT_TRUE(root.has_value());
  const auto& meta = (*root)["consolidated_metadata"]["metadata"];
  EXPECT_EQ(meta["a"]["shape"], tools::convert::Json::array({13, 7}));
  EXPECT_EQ(meta["a"]["attributes"]["units"], "m");
  EXPECT_EQ(meta["g"]["node_type"], "group");
  EXPECT_EQ((*root)["attributes"]["t"], 1);
  EXPECT_EQ((*root)["attributes"]["note"], "n");
  EXPECT_EQ((*root)["consolidated_metadata"]["kind"], "inline");
  // What reopening the store finds.
  auto again = Open(false);
  auto read = again->OpenDataset("/a");
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ((*read)->info().dataset.shape, (Dims{13, 7}));
}

// The attributes the tree shows from an array's metadata are changed there,
// so that the store means what the mount shows to zarr-python and xarray
// too: _FillValue of a v2 array xarray reads (it names its dimensions) is
// .zarray's fill_value, which a chunk never written reads as; its plain
// twin in .zattrs, which xarray ignores, is hidden and goes when it is set.
// It changes only while no chunk is stored (a late fill value would change
// the chunks left out for holding only the old one). v2's
// _ARRAY_DIMENSIONS is written as the list xarray wants, not its text.
TEST_F(ZarrWriterTest, AV2FillValueAttributeIsTheArraysFillValue) {
  MakeArray("a", 8, R"({"id": "zlib", "level": 1})");
  WriteText(root_ / "a" / ".zattrs", R"({"_ARRAY_DIMENSIONS": ["y", "x"], "_FillValue": 5})");
  MakeArray("b", 4, "null");
  auto store = Open();
  StoreWriter* w = store->writer();
  auto a = store->Resolve("/a");
  auto b = store->Resolve("/b");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(store->GetAttribute(*a, "_FillValue")->ToText(), "-1");  // fill_value, as xarray reads it
  // The hidden .zattrs value is said.
  bool said = false;
  for (const SkippedObject& k : store->Skipped()) said |= k.path.find("/a attribute '_FillValue'") != std::string::npos;
  EXPECT_TRUE(said);
  auto reader = store->OpenDataset("/a");
  ASSERT_TRUE(reader.has_value());
  // Nothing stored yet: the fill value changes, and a dataset opened before
  // the change reads it.
  ASSERT_OK(w->SetAttribute(*a, "_FillValue", Attribute::Integer(-7)));
  auto zarray = tools::convert::ReadJsonFile((root_ / "a" / ".zarray").string());
  ASSERT_TRUE(zarray.has_value());
  EXPECT_EQ((*zarray)["fill_value"], -7);
  auto zattrs = tools::convert::ReadJsonFile((root_ / "a" / ".zattrs").string());
  ASSERT_TRUE(zattrs.has_value());
  EXPECT_FALSE(zattrs->contains("_FillValue"));
  EXPECT_EQ((*zattrs)["_ARRAY_DIMENSIONS"], tools::convert::Json::array({"y", "x"}));
  EXPECT_EQ(store->GetAttribute(*a, "_FillValue")->ToText(), "-7");
  std::vector<int32_t> all(8 * 7);
  ASSERT_OK((*reader)->Read(Slab::Box({0, 0}, {8, 7}), all.data()));
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], -7) << i;
  // Rows 0-3 written: 9s, and a chunk of the fill value, which is left
  // out. From now on a new fill value changes no element: the chunks not
  // stored (0.0, left out, and rows 4-7, never written) are stored first,
  // holding the old value.
  std::vector<int32_t> rows(4 * 7, 9);
  for (size_t r = 0; r < 4; ++r)
    for (size_t c = 0; c < 3; ++c) rows[r * 7 + c] = -7;
  ASSERT_OK(Writable(*store, "/a")->Write(Slab::Box({0, 0}, {4, 7}), rows.data()));
  EXPECT_FALSE(fs::exists(root_ / "a" / "0.0"));
  ASSERT_OK(w->SetAttribute(*a, "_FillValue", Attribute::Integer(-1)));
  EXPECT_EQ((*tools::convert::ReadJsonFile((root_ / "a" / ".zarray").string()))["fill_value"], -1);
  EXPECT_EQ(store->GetAttribute(*a, "_FillValue")->ToText(), "-1");
  for (const char* key : {"0.0", "1.0", "1.1", "1.2"}) EXPECT_TRUE(fs::exists(root_ / "a" / key)) << key;
  ASSERT_OK((*reader)->Read(Slab::Box({0, 0}, {8, 7}), all.data()));
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], i < 28 ? rows[i] : -7) << i;
  // A chunk of the new value written now is left out again.
  std::vector<int32_t> minus(4 * 3, -1);
  ASSERT_OK(Writable(*store, "/a")->Write(Slab::Box({4, 0}, {4, 3}), minus.data()));
  EXPECT_FALSE(fs::exists(root_ / "a" / "1.0"));
  // Bad values and removal are refused; the store is as it was.
  EXPECT_CODE(w->SetAttribute(*a, "_FillValue", Attribute::String("none")), Code::kInvalidArgument);
  EXPECT_CODE(w->SetAttribute(*a, "_FillValue", Attribute::Float(0.5)), Code::kInvalidArgument);
  EXPECT_CODE(w->SetAttribute(*a, "_FillValue", Attribute::Integer(int64_t{1} << 40)), Code::kInvalidArgument);
  EXPECT_CODE(w->RemoveAttribute(*a, "_FillValue"), Code::kNotSupported);
  EXPECT_EQ((*tools::convert::ReadJsonFile((root_ / "a" / ".zarray").string()))["fill_value"], -1);
  // /b names no dimensions: its _FillValue is an attribute like any other,
  // until _ARRAY_DIMENSIONS (written as a list) makes it xarray's.
  ASSERT_OK(w->SetAttribute(*b, "_FillValue", Attribute::Integer(3)));
  EXPECT_EQ(store->GetAttribute(*b, "_FillValue")->ToText(), "3");
  ASSERT_OK(w->SetAttribute(*b, "_ARRAY_DIMENSIONS", Attribute::String(R"(["p","q"])")));
  auto battrs = tools::convert::ReadJsonFile((root_ / "b" / ".zattrs").string());
  ASSERT_TRUE(battrs.has_value());
  EXPECT_EQ((*battrs)["_ARRAY_DIMENSIONS"], tools::convert::Json::array({"p", "q"}));
  EXPECT_EQ(store->GetAttribute(*b, "_FillValue")->ToText(), "-1");
  ASSERT_OK(w->RemoveAttribute(*b, "_ARRAY_DIMENSIONS"));
  EXPECT_EQ(store->GetAttribute(*b, "_FillValue")->ToText(), "3");
  ASSERT_OK(w->SetAttribute(*b, "_ARRAY_DIMENSIONS", Attribute::String(R"(["p","q"])")));
  ASSERT_OK(w->Sync());
  // Reopening shows what the tree showed.
  auto again = Open(false);
  for (const char* path : {"/a", "/b"}) {
    auto id = again->Resolve(path);
    ASSERT_TRUE(id.has_value());
    auto orig = store->Resolve(path);
    EXPECT_EQ(again->GetAttribute(*id, "_FillValue")->ToText(), store->GetAttribute(*orig, "_FillValue")->ToText())
        << path;
    EXPECT_EQ(again->GetAttribute(*id, "_ARRAY_DIMENSIONS")->ToText(),
              store->GetAttribute(*orig, "_ARRAY_DIMENSIONS")->ToText())
        << path;
  }
}

// A chunk that holds only the fill value is left out, and leaves no trace
// in the store: once anything was written, a new fill value stores the
// chunks left out first, even while no chunk is stored (else the elements
// written as the fill value would read as the new one: cp -a writes the
// data, then sets the attributes). An array with more chunks to store than
// kMaxChunksStoredForAFillChange keeps its fill value. A v2 array's
// _ARRAY_DIMENSIONS names one dimension each, as xarray needs; on a group
// it is an attribute like any other.
TEST_F(ZarrWriterTest, ANewFillValueKeepsWhatWasWritten) {
  MakeArray("a", 8, R"({"id": "zlib", "level": 1})");
  WriteText(root_ / "a" / ".zattrs", R"({"_ARRAY_DIMENSIONS": ["y", "x"]})");
  auto store = Open();
  StoreWriter* w = store->writer();
  auto a = store->Resolve("/a");
  ASSERT_TRUE(a.has_value());
  std::vector<int32_t> fill(4 * 3, -1);
  ASSERT_OK(Writable(*store, "/a")->Write(Slab::Box({0, 0}, {4, 3}), fill.data()));
  EXPECT_FALSE(fs::exists(root_ / "a" / "0.0"));
  ASSERT_OK(w->SetAttribute(*a, "_FillValue", Attribute::Integer(0)));
  EXPECT_EQ((*tools::convert::ReadJsonFile((root_ / "a" / ".zarray").string()))["fill_value"], 0);
  std::vector<int32_t> back(8 * 7, 0);
  ASSERT_OK((*store->OpenDataset("/a"))->Read(Slab::Box({0, 0}, {8, 7}), back.data()));
  for (size_t i = 0; i < back.size(); ++i) EXPECT_EQ(back[i], -1) << i;
  // Too many chunks to store: refused, nothing changed.
  const uint64_t rows = (kMaxChunksStoredForAFillChange / 3 + 1) * 4;  // 3 chunks a row of chunks
  MakeArray("big", rows, "null");
  WriteText(root_ / "big" / ".zattrs", R"({"_ARRAY_DIMENSIONS": ["y", "x"]})");
  auto store2 = Open();
  auto big = store2->Resolve("/big");
  ASSERT_TRUE(big.has_value());
  std::vector<int32_t> one(1, 5);
  ASSERT_OK(Writable(*store2, "/big")->Write(Slab::Box({0, 0}, {1, 1}), one.data()));
  EXPECT_CODE(store2->writer()->SetAttribute(*big, "_FillValue", Attribute::Integer(0)), Code::kPermissionDenied);
  EXPECT_EQ((*tools::convert::ReadJsonFile((root_ / "big" / ".zarray").string()))["fill_value"], -1);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(root_ / "big")) files += e.path().filename().string()[0] != '.';
  EXPECT_EQ(files, 1u);
  // Chunks left out by writes hold data, and count against no limit: the
  // whole array written as the fill value (cp -a of an array with another
  // fill value over it), then a new one.
  MakeArray("big2", rows, "null");
  WriteText(root_ / "big2" / ".zattrs", R"({"_ARRAY_DIMENSIONS": ["y", "x"]})");
  auto store3 = Open();
  auto big2 = store3->Resolve("/big2");
  ASSERT_TRUE(big2.has_value());
  std::vector<int32_t> all_fill(rows * 7, -1);
  ASSERT_OK(Writable(*store3, "/big2")->Write(Slab::Box({0, 0}, {rows, 7}), all_fill.data()));
  ASSERT_OK(store3->writer()->SetAttribute(*big2, "_FillValue", Attribute::Integer(0)));
  files = 0;
  for (const auto& e : fs::directory_iterator(root_ / "big2")) files += e.path().filename().string()[0] != '.';
  EXPECT_EQ(files, rows / 4 * 3);
  std::vector<int32_t> back2(rows * 7, 0);
  ASSERT_OK((*store3->OpenDataset("/big2"))->Read(Slab::Box({0, 0}, {rows, 7}), back2.data()));
  EXPECT_EQ(back2, all_fill);

  const std::string zattrs = ReadText(root_ / "a" / ".zattrs");
  for (const char* bad : {R"(["t"])", R"(["t","y","x"])", "y,x", R"(["y", null])", R"({"y": 1})", R"(["y","y"])"}) {
    SCOPED_TRACE(bad);
    EXPECT_CODE(w->SetAttribute(*a, "_ARRAY_DIMENSIONS", Attribute::String(bad)), Code::kInvalidArgument);
  }
  EXPECT_CODE(w->SetAttribute(*a, "_ARRAY_DIMENSIONS", Attribute::Integer(2)), Code::kInvalidArgument);
  EXPECT_EQ(ReadText(root_ / "a" / ".zattrs"), zattrs);
  EXPECT_EQ(store->GetAttribute(*a, "_ARRAY_DIMENSIONS")->ToText(), R"(["y","x"])");
  ASSERT_OK(w->SetAttribute(*a, "_ARRAY_DIMENSIONS", Attribute::String(R"(["t", "x"])")));
  EXPECT_EQ((*tools::convert::ReadJsonFile((root_ / "a" / ".zattrs").string()))["_ARRAY_DIMENSIONS"],
            tools::convert::Json::array({"t", "x"}));
  ASSERT_OK(w->SetAttribute(kRootId, "_ARRAY_DIMENSIONS", Attribute::String("free text")));
  EXPECT_EQ(store->GetAttribute(kRootId, "_ARRAY_DIMENSIONS")->ToText(), "free text");
}

// v3: _ARRAY_DIMENSIONS is the array's dimension_names, set and removed
// there (a plain attribute of that name, which the tree hides, goes).
TEST_F(ZarrWriterTest, AV3ArrayDimensionsAttributeIsItsDimensionNames) {
  fs::remove(root_ / ".zgroup");
  WriteText(root_ / "zarr.json", R"({"zarr_format": 3, "node_type": "group", "attributes": {}})");
  fs::create_directories(root_ / "a");
  WriteText(root_ / "a" / "zarr.json", R"({"zarr_format": 3, "node_type": "array", "shape": [10, 7],
    "data_type": "int32", "fill_value": -1,
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 3]}},
    "chunk_key_encoding": {"name": "default"}, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    "dimension_names": ["y", "x"], "attributes": {"_ARRAY_DIMENSIONS": ["old", "stale"], "units": "m"}})");
  auto store = Open();
  StoreWriter* w = store->writer();
  auto a = store->Resolve("/a");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(store->GetAttribute(*a, "_ARRAY_DIMENSIONS")->ToText(), R"(["y","x"])");
  ASSERT_OK(w->SetAttribute(*a, "_ARRAY_DIMENSIONS", Attribute::String(R"(["time", null])")));
  auto doc = tools::convert::ReadJsonFile((root_ / "a" / "zarr.json").string());
  ASSERT_TRUE(doc.has_value());
  EXPECT_EQ((*doc)["dimension_names"], tools::convert::Json::parse(R"(["time", null])"));
  EXPECT_FALSE((*doc)["attributes"].contains("_ARRAY_DIMENSIONS"));
  EXPECT_EQ((*doc)["attributes"]["units"], "m");
  EXPECT_EQ(store->GetAttribute(*a, "_ARRAY_DIMENSIONS")->ToText(), R"(["time",null])");
  // Not one name per dimension, or not a list of names: refused, unchanged.
  EXPECT_CODE(w->SetAttribute(*a, "_ARRAY_DIMENSIONS", Attribute::String(R"(["t"])")), Code::kInvalidArgument);
  EXPECT_CODE(w->SetAttribute(*a, "_ARRAY_DIMENSIONS", Attribute::String("time,x")), Code::kInvalidArgument);
  EXPECT_CODE(w->SetAttribute(*a, "_ARRAY_DIMENSIONS", Attribute::Integer(2)), Code::kInvalidArgument);
  EXPECT_EQ((*tools::convert::ReadJsonFile((root_ / "a" / "zarr.json").string()))["dimension_names"],
            tools::convert::Json::parse(R"(["time", null])"));
  auto again = Open(false);
  EXPECT_EQ(again->GetAttribute(*again->Resolve("/a"), "_ARRAY_DIMENSIONS")->ToText(), R"(["time",null])");
  ASSERT_OK(w->RemoveAttribute(*a, "_ARRAY_DIMENSIONS"));
  EXPECT_FALSE((*tools::convert::ReadJsonFile((root_ / "a" / "zarr.json").string())).contains("dimension_names"));
  EXPECT_FALSE(store->GetAttribute(*a, "_ARRAY_DIMENSIONS").has_value());
  EXPECT_CODE(w->RemoveAttribute(*a, "_ARRAY_DIMENSIONS"), Code::kNotFound);
  auto third = Open(false);
  EXPECT_FALSE(third->GetAttribute(*third->Resolve("/a"), "_ARRAY_DIMENSIONS").has_value());
}

}  // namespace
}  // namespace slabfs::stores
