// slab repack on real containers in a temporary directory: the copy is
// complete and exact, options change what they say, refusals leave every
// file as it was, and the result has no free space inside.
#include "tools/block_walk.h"
#include "tools/cmd_repack.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <boost/filesystem.hpp>

#include "engine/api_access.h"
#include "engine/container_impl.h"
#include "engine/format/layout.h"
#include "slabfs/container.h"
#include "tests/testutil/block_scan.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::tools {
namespace {
namespace fs = boost::filesystem;

TEST(CopyBlockChunksTest, TakesTheWholeDatasetWhenItFits) {
  EXPECT_EQ(CopyBlockChunks({100, 100}, {10, 10}, 4, 1 << 20), (Dims{10, 10}));
  EXPECT_EQ(CopyBlockChunks({7}, {3}, 8, 1 << 20), (Dims{3}));
}

TEST(CopyBlockChunksTest, TakesWholeChunkRowsUpToTheBudget) {
  // A chunk row of 10 x 1000 f4 is 40000 bytes: two fit in 100000.
  EXPECT_EQ(CopyBlockChunks({1000, 1000}, {10, 10}, 4, 100000), (Dims{2, 100}));
}

TEST(CopyBlockChunksTest, SplitsARowThatDoesNotFit) {
  // One chunk row is 10 x 1000 x 4 = 40000 bytes; with 10000 bytes, one
  // chunk along the first dimension and 25 chunks (10 x 250) along the second.
  EXPECT_EQ(CopyBlockChunks({1000, 1000}, {10, 10}, 4, 10000), (Dims{1, 25}));
  // Rank 3: one row of the last two dimensions.
  EXPECT_EQ(CopyBlockChunks({4, 100, 100}, {2, 10, 10}, 1, 2000), (Dims{1, 1, 10}));
}

TEST(CopyBlockChunksTest, NeverLessThanOneChunk) {
  EXPECT_EQ(CopyBlockChunks({1000, 1000}, {500, 500}, 8, 100), (Dims{1, 1}));
  // Chunks larger than the shape count as clipped to it.
  EXPECT_EQ(CopyBlockChunks({5, 5}, {100, 100}, 1, 25), (Dims{1, 1}));
}

class RepackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fs::unique_path("slab-repack-%%%%-%%%%");
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  static std::unique_ptr<Container> Create(const std::string& path) {
    auto c = Container::Open(path, {.create = true});
    EXPECT_TRUE(c.has_value()) << c.error().ToString();
    return c ? std::move(*c) : nullptr;
  }
  static std::unique_ptr<Container> Read(const std::string& path) {
    auto c = Container::Open(path, {.read_only = true});
    EXPECT_TRUE(c.has_value()) << c.error().ToString();
    return c ? std::move(*c) : nullptr;
  }

  // A container with nested groups, datasets of several kinds (filled,
  // sparse, empty, growable, one with filters) and attributes of every kind.
  void MakeSource(const std::string& path) {
    auto c = Create(path);
    ASSERT_NE(c, nullptr);
    ASSERT_OK(c->MakeGroups("/g/sub"));
    ASSERT_OK(c->MakeGroups("/empty"));
    ASSERT_OK_AND_ASSIGN(ObjectId root, c->Resolve("/"));
    ASSERT_OK(c->SetAttribute(root, "title", Attribute::String("run 1")));
    ASSERT_OK_AND_ASSIGN(ObjectId g, c->Resolve("/g"));
    ASSERT_OK(c->SetAttribute(g, "n", Attribute::Integer(-3)));
    ASSERT_OK(c->SetAttribute(g, "scale", Attribute::Float(0.25)));
    ASSERT_OK(c->SetAttribute(g, "u2s", Attribute::Numbers(DType::kU2, std::string("\x01\x00\x02\x00\x03\x00", 6))));

    DatasetOptions dense{.dtype = DType::kF4, .shape = {30, 20}, .chunks = {7, 6}};
    dense.fill = std::string("\x00\x00\x80\xbf", 4);  // -1.0f
    ASSERT_OK_AND_ASSIGN(Dataset d, c->CreateDataset("/g/dense", dense));
    std::vector<float> values(600);
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f;
    ASSERT_OK(d.WriteElements(0, values.size(), values.data()));
    ASSERT_OK(c->SetAttribute(d.id(), "units", Attribute::String("K")));

    // Two of 100 chunks written.
    DatasetOptions sparse{.dtype = DType::kI4, .shape = {100, 100}, .chunks = {10, 10}};
    ASSERT_OK_AND_ASSIGN(Dataset s, c->CreateDataset("/g/sub/sparse", sparse));
    std::vector<int32_t> row(10, 7);
    ASSERT_OK(s.Write(Slab::Box({0, 0}, {1, 10}), row.data()));
    ASSERT_OK(s.Write(Slab::Box({95, 90}, {1, 10}), row.data()));

    DatasetOptions never{.dtype = DType::kU8, .shape = {1000}, .chunks = {100}};
    ASSERT_OK(c->CreateDataset("/never", never));

    DatasetOptions stream{.dtype = DType::kU2,
                          .shape = {5, 8},
                          .max_shape = {kUnlimited, 8},
                          .chunks = {2, 8},
                          .index = IndexKind::kBTree};
    ASSERT_OK_AND_ASSIGN(Dataset st, c->CreateDataset("/stream", stream));
    std::vector<uint16_t> frames(40);
    for (size_t i = 0; i < frames.size(); ++i) frames[i] = static_cast<uint16_t>(i * 3);
    ASSERT_OK(st.WriteElements(0, frames.size(), frames.data()));

    DatasetOptions filtered{.dtype = DType::kF8, .shape = {64, 64}, .chunks = {16, 16}, .filters = "shuffle,deflate=4"};
    ASSERT_OK_AND_ASSIGN(Dataset f, c->CreateDataset("/filtered", filtered));
    std::vector<double> smooth(64 * 64);
    for (size_t i = 0; i < smooth.size(); ++i) smooth[i] = static_cast<double>(i / 64);
    ASSERT_OK(f.WriteElements(0, smooth.size(), smooth.data()));

    // A removed dataset leaves free space behind in the source.
    ASSERT_OK(c->Commit());
    ASSERT_OK_AND_ASSIGN(Dataset gone, c->CreateDataset("/gone", dense));
    ASSERT_OK(gone.WriteElements(0, values.size(), values.data()));
    ASSERT_OK(c->Commit());
    ASSERT_OK(c->Remove("/gone"));
    ASSERT_OK(c->Close());
  }

  // Every object path under the root, with its kind, depth first.
  static std::vector<std::string> Tree(const Container& c, ObjectId id = kRootId, const std::string& path = "") {
    std::vector<std::string> out;
    auto children = c.List(id);
    EXPECT_TRUE(children.has_value());
    if (!children) return out;
    for (const Entry& e : *children) {
      std::string p = path + "/" + e.name;
      out.push_back(p + (e.kind == ObjectKind::kGroup ? "/" : ""));
      if (e.kind == ObjectKind::kGroup) {
        auto sub = Tree(c, e.id, p);
        out.insert(out.end(), sub.begin(), sub.end());
      }
    }
    return out;
  }

  static std::map<std::string, std::string> Attributes(const Container& c, const std::string& path) {
    std::map<std::string, std::string> out;
    auto id = c.Resolve(path);
    EXPECT_TRUE(id.has_value()) << path;
    if (!id) return out;
    auto names = c.ListAttributes(*id);
    EXPECT_TRUE(names.has_value());
    if (!names) return out;
    for (const std::string& n : *names) {
      auto a = c.GetAttribute(*id, n);
      EXPECT_TRUE(a.has_value());
      if (!a) continue;
      out[n] = std::string(1, static_cast<char>(a->kind)) + std::string(1, static_cast<char>(a->dtype)) + a->data;
    }
    return out;
  }

  static std::string Elements(const Container& c, const std::string& path) {
    auto ds = c.OpenDataset(path);
    EXPECT_TRUE(ds.has_value()) << path;
    if (!ds) return "";
    std::string bytes(ds->size_bytes(), '\0');
    Status s = ds->ReadElements(0, ds->num_elements(), bytes.data());
    EXPECT_TRUE(s.ok()) << s.ToString();
    return bytes;
  }

  static DatasetInfo Info(const Container& c, const std::string& path) {
    auto ds = c.OpenDataset(path);
    EXPECT_TRUE(ds.has_value()) << path;
    return ds ? ds->info() : DatasetInfo{};
  }

  Status Repack(const RepackOptions& o) {
    std::ostringstream out;
    Status s = RunRepack(o, out);
    output_ = out.str();
    return s;
  }

  size_t CountFiles() const {
    size_t n = 0;
    for (auto it = fs::directory_iterator(dir_); it != fs::directory_iterator(); ++it) ++n;
    return n;
  }

  fs::path dir_;
  std::string output_;
};

const char* const kDatasets[] = {"/g/dense", "/g/sub/sparse", "/never", "/stream", "/filtered"};

TEST_F(RepackTest, CopiesEveryObjectAttributeAndElement) {
  MakeSource(Path("in.slab"));
  ASSERT_OK(Repack({.file = Path("in.slab"), .output = Path("out.slab")}));
  auto in = Read(Path("in.slab"));
  auto out = Read(Path("out.slab"));
  ASSERT_TRUE(in && out);
  EXPECT_EQ(Tree(*out), Tree(*in));
  for (const std::string& p : Tree(*in)) {
    std::string path = p.back() == '/' && p.size() > 1 ? p.substr(0, p.size() - 1) : p;
    SCOPED_TRACE(path);
    EXPECT_EQ(Attributes(*out, path), Attributes(*in, path));
  }
  EXPECT_EQ(Attributes(*out, "/"), Attributes(*in, "/"));
  for (const char* path : kDatasets) {
    SCOPED_TRACE(path);
    DatasetInfo a = Info(*in, path), b = Info(*out, path);
    EXPECT_EQ(b.dtype, a.dtype);
    EXPECT_EQ(b.shape, a.shape);
    EXPECT_EQ(b.max_shape, a.max_shape);
    EXPECT_EQ(b.chunks, a.chunks);
    EXPECT_EQ(b.fill, a.fill);
    EXPECT_EQ(b.index, a.index);
    EXPECT_EQ(b.filters, a.filters);
    EXPECT_EQ(b.allocated_chunks, a.allocated_chunks);
    EXPECT_EQ(b.length_resizable, a.length_resizable);
    EXPECT_EQ(Elements(*out, path), Elements(*in, path));
  }
  EXPECT_NE(output_.find("copied 3 groups, 5 datasets and 5 attributes"), std::string::npos) << output_;
}

// Whether a dataset's length can change is not always visible in its
// shapes: a stream grown to its maximum, a fixed dataset shrunk by resize.
TEST_F(RepackTest, KeepsWhetherTheLengthCanChange) {
  {
    auto c = Create(Path("in.slab"));
    ASSERT_NE(c, nullptr);
    ASSERT_OK_AND_ASSIGN(Dataset full,
                         c->CreateDataset("/full", {.dtype = DType::kU1, .shape = {2, 8}, .max_shape = {4, 8}}));
    ASSERT_OK(full.Resize({4, 8}));
    ASSERT_OK_AND_ASSIGN(Dataset shrunk, c->CreateDataset("/shrunk", {.dtype = DType::kU1, .shape = {6, 8}}));
    ASSERT_OK(shrunk.Resize({3, 8}));
    ASSERT_OK(c->Close());
  }
  ASSERT_OK(Repack({.file = Path("in.slab"), .output = Path("out.slab")}));
  auto out = Read(Path("out.slab"));
  ASSERT_NE(out, nullptr);
  EXPECT_TRUE(Info(*out, "/full").length_resizable);
  EXPECT_EQ(Info(*out, "/full").max_shape, (Dims{4, 8}));
  EXPECT_FALSE(Info(*out, "/shrunk").length_resizable);
  EXPECT_EQ(Info(*out, "/shrunk").shape, (Dims{3, 8}));
}

// A sparse dataset stays sparse: the same defined elements, nothing more.
TEST_F(RepackTest, KeepsSparseDatasetsSparse) {
  std::vector<Box> before;
  {
    auto c = Create(Path("in.slab"));
    ASSERT_NE(c, nullptr);
    ASSERT_OK_AND_ASSIGN(
        Dataset s, c->CreateDataset("/s", {.dtype = DType::kU2, .shape = {50, 60}, .chunks = {8, 8}, .sparse = true}));
    std::vector<uint16_t> v(20 * 30, 9);
    ASSERT_OK(s.Write(Slab::Box({5, 7}, {20, 30}), v.data()));
    ASSERT_OK(s.Erase(Slab::Box({10, 10}, {4, 4})));
    ASSERT_OK(s.Write(Slab::Box({49, 59}, {1, 1}), v.data()));
    ASSERT_OK_AND_ASSIGN(before, s.Defined(Slab::All({50, 60})));
    ASSERT_OK(c->Close());
  }
  ASSERT_OK(Repack({.file = Path("in.slab"), .output = Path("out.slab")}));
  auto out = Read(Path("out.slab"));
  ASSERT_NE(out, nullptr);
  ASSERT_OK_AND_ASSIGN(Dataset s, out->OpenDataset("/s"));
  EXPECT_TRUE(s.info().sparse);
  EXPECT_EQ(s.info().defined_elements, 20u * 30 - 16 + 1);
  ASSERT_OK_AND_ASSIGN(std::vector<Box> after, s.Defined(Slab::All({50, 60})));
  EXPECT_EQ(after, before);
}

// The output is written once, packed (OpenOptions::pack: no alignment
// gaps), into a container whose empty root was never a block: nothing
// inside it is free.
TEST_F(RepackTest, LeavesNoFreeSpaceInside) {
  MakeSource(Path("in.slab"));
  ASSERT_OK(Repack({.file = Path("in.slab"), .output = Path("out.slab")}));
  auto out = Read(Path("out.slab"));
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->space().free_bytes, 0u) << output_;
}

TEST_F(RepackTest, RewritesTheFirstFixedArrayLayoutInTheNewOne) {
  // A container an earlier build wrote (tests/data/README.md): its fixed
  // arrays' blocks are of types 3 and 4, which the engine reads but never
  // writes. The copy holds the same elements in blocks of types 6 and 7.
  const std::string in = Path("old.slab"), out = Path("new.slab");
  fs::copy_file(fs::path(SLABFS_TEST_DATA_DIR) / "first_fixed_array_layout.slab", in);
  ASSERT_OK(Repack({.file = in, .output = out, .quiet = true}));
  auto slurp = [](const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  };
  auto before = testutil::CountBlocksByType(slurp(in));
  auto after = testutil::CountBlocksByType(slurp(out));
  EXPECT_GT(before[engine::BlockType::kFixedArrayLeaf], 0);
  EXPECT_EQ(after.count(engine::BlockType::kFixedArrayLeaf), 0u);
  EXPECT_EQ(after.count(engine::BlockType::kFixedArrayNode), 0u);
  EXPECT_GT(after[engine::BlockType::kPagedLeaf], before[engine::BlockType::kPagedLeaf]);
  auto src = Read(in);
  auto dst = Read(out);
  ASSERT_TRUE(src && dst);
  for (const char* name : {"/fixed_deep", "/fixed_filtered", "/ext"}) {
    SCOPED_TRACE(name);
    ASSERT_OK_AND_ASSIGN(Dataset a, src->OpenDataset(name));
    ASSERT_OK_AND_ASSIGN(Dataset b, dst->OpenDataset(name));
    EXPECT_EQ(b.info().index, a.info().index);
    EXPECT_EQ(b.info().allocated_chunks, a.info().allocated_chunks);
    std::string x(a.size_bytes(), '\0'), y(b.size_bytes(), '\0');
    ASSERT_OK(a.ReadElements(0, a.num_elements(), x.data()));
    ASSERT_OK(b.ReadElements(0, b.num_elements(), y.data()));
    EXPECT_TRUE(x == y);
  }
}

// One commit, every chunk written once: nothing is freed on the way.
TEST_F(RepackTest, WritesEveryChunkOnceInOneCommit) {
  MakeSource(Path("in.slab"));
  auto in = Read(Path("in.slab"));
  auto out = Create(Path("out.slab"));
  ASSERT_TRUE(in && out);
  std::ostringstream notes;
  ASSERT_OK_AND_ASSIGN(CopyCounts counts, CopyContainer(*in, *out, Dims{4, 4}, std::nullopt, notes));
  EXPECT_EQ(counts.datasets, 5u);
  ASSERT_OK(out->Commit());
  uint64_t stored = 0;
  for (const char* path : kDatasets) stored += Info(*out, path).stored_bytes;
  EXPECT_GT(stored, 0u);
  EXPECT_EQ(out->cache_stats().bytes_written, stored);
  EXPECT_EQ(out->space().generation, 2u);  // created, then one commit

  for (const engine::FreedExtent& e : engine::ApiAccess::Impl(*out).allocator().Unreferenced()) {
    SCOPED_TRACE(fmt::format("free extent {}+{}", e.addr, e.len));
    // A gap ends where an aligned extent starts, and is shorter than the
    // largest alignment; the first also holds the replaced 64-byte root.
    EXPECT_EQ((e.addr + e.len) % 16, 0u);
    EXPECT_LT(e.len, e.addr == engine::kDataStart ? 4096u + 64u : 4096u);
  }
  EXPECT_NE(notes.str().find("of another rank kept its chunks (/never)"), std::string::npos) << notes.str();
}

TEST_F(RepackTest, SummaryReportsSizesAndFreeSpace) {
  MakeSource(Path("in.slab"));
  ASSERT_OK(Repack({.file = Path("in.slab"), .output = Path("out.slab")}));
  auto in = Read(Path("in.slab"));
  auto out = Read(Path("out.slab"));
  ASSERT_TRUE(in && out);
  EXPECT_NE(output_.find(fmt::format("file bytes: {} -> {}\n", in->space().file_bytes, out->space().file_bytes)),
            std::string::npos)
      << output_;
  EXPECT_NE(output_.find(fmt::format("free bytes inside: {} -> {}\n", in->space().free_bytes, out->space().free_bytes)),
            std::string::npos)
      << output_;
  EXPECT_LT(out->space().free_bytes, in->space().free_bytes);
  EXPECT_NE(output_.find("stored chunk bytes: "), std::string::npos) << output_;
}

TEST_F(RepackTest, EmptyAndSparseDatasetsStaySmall) {
  MakeSource(Path("in.slab"));
  ASSERT_OK(Repack({.file = Path("in.slab"), .output = Path("out.slab"), .chunks = "5,5"}));
  auto out = Read(Path("out.slab"));
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(Info(*out, "/never").allocated_chunks, 0u);
  // Each of the two stored 10x10 chunks becomes four 5x5 chunks; the other
  // 392 stay unstored.
  DatasetInfo sparse = Info(*out, "/g/sub/sparse");
  EXPECT_EQ(sparse.chunks, (Dims{5, 5}));
  EXPECT_EQ(sparse.allocated_chunks, 8u);
  auto in = Read(Path("in.slab"));
  EXPECT_EQ(Elements(*out, "/g/sub/sparse"), Elements(*in, "/g/sub/sparse"));
}

TEST_F(RepackTest, NewChunksApplyToDatasetsOfTheSameRank) {
  MakeSource(Path("in.slab"));
  ASSERT_OK(Repack({.file = Path("in.slab"), .output = Path("out.slab"), .chunks = "8,3"}));
  auto in = Read(Path("in.slab"));
  auto out = Read(Path("out.slab"));
  ASSERT_TRUE(in && out);
  for (const char* path : {"/g/dense", "/g/sub/sparse", "/stream", "/filtered"}) {
    SCOPED_TRACE(path);
    EXPECT_EQ(Info(*out, path).chunks, (Dims{8, 3}));
    EXPECT_EQ(Elements(*out, path), Elements(*in, path));
  }
  EXPECT_EQ(Info(*out, "/never").chunks, (Dims{100}));
  EXPECT_NE(output_.find("--chunks 8,3 is for datasets of rank 2: 1 dataset of another rank kept its "
                         "chunks (/never)\n"),
            std::string::npos)
      << output_;
  // A kind that still fits is chosen again: the growable stream keeps an index
  // for an unlimited first dimension.
  EXPECT_EQ(Info(*out, "/stream").max_shape, (Dims{kUnlimited, 8}));
}

TEST_F(RepackTest, FilterOptionsReplaceEveryPipeline) {
  MakeSource(Path("in.slab"));
  RepackOptions o{.file = Path("in.slab"), .output = Path("out.slab")};
  o.filters.deflate = "9";
  o.filters.checksum = true;
  ASSERT_OK(Repack(o));
  auto in = Read(Path("in.slab"));
  auto out = Read(Path("out.slab"));
  for (const char* path : kDatasets) {
    SCOPED_TRACE(path);
    EXPECT_EQ(Info(*out, path).filters, "deflate=9,checksum");
    EXPECT_EQ(Elements(*out, path), Elements(*in, path));
  }
}

TEST_F(RepackTest, FiltersNoneRemovesEveryPipeline) {
  MakeSource(Path("in.slab"));
  RepackOptions o{.file = Path("in.slab"), .output = Path("out.slab")};
  o.filters.filters = "none";
  ASSERT_OK(Repack(o));
  auto in = Read(Path("in.slab"));
  auto out = Read(Path("out.slab"));
  EXPECT_EQ(Info(*in, "/filtered").filters, "shuffle,deflate=4");
  EXPECT_EQ(Info(*out, "/filtered").filters, "");
  EXPECT_EQ(Elements(*out, "/filtered"), Elements(*in, "/filtered"));
}

TEST_F(RepackTest, RefusesAnExistingOutput) {
  MakeSource(Path("in.slab"));
  {
    std::ofstream f(Path("out.slab"));
    f << "precious";
  }
  Status s = Repack({.file = Path("in.slab"), .output = Path("out.slab")});
  EXPECT_EQ(s.code(), Code::kAlreadyExists) << s.ToString();
  std::ifstream f(Path("out.slab"));
  std::string text;
  f >> text;
  EXPECT_EQ(text, "precious");
  EXPECT_EQ(CountFiles(), 2u);
}

TEST_F(RepackTest, RefusesToWriteOverItsInput) {
  MakeSource(Path("in.slab"));
  fs::create_directories(dir_ / "sub");
  fs::create_symlink(Path("in.slab"), Path("link.slab"));
  fs::create_hard_link(Path("in.slab"), Path("hard.slab"));
  for (const std::string& same : {Path("in.slab"), Path("sub/../in.slab"), Path("link.slab"), Path("hard.slab")}) {
    SCOPED_TRACE(same);
    Status s = Repack({.file = Path("in.slab"), .output = same});
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("input"), std::string::npos) << s.ToString();
  }
  auto in = Read(Path("in.slab"));
  ASSERT_NE(in, nullptr);
  EXPECT_EQ(Info(*in, "/g/dense").shape, (Dims{30, 20}));
}

TEST_F(RepackTest, MissingOrBadInputCreatesNothing) {
  Status s = Repack({.file = Path("missing.slab"), .output = Path("out.slab")});
  EXPECT_EQ(s.code(), Code::kNotFound) << s.ToString();
  {
    std::ofstream f(Path("junk.slab"));
    f << std::string(8192, 'x');
  }
  s = Repack({.file = Path("junk.slab"), .output = Path("out.slab")});
  EXPECT_EQ(s.code(), Code::kNotSupported) << s.ToString();  // not a slabfs container
  EXPECT_FALSE(fs::exists(Path("out.slab")));
  EXPECT_EQ(CountFiles(), 1u);  // junk.slab, and no temporary file
}

TEST_F(RepackTest, BadOptionsCreateNothing) {
  MakeSource(Path("in.slab"));
  RepackOptions bad_level{.file = Path("in.slab"), .output = Path("out.slab")};
  bad_level.filters.deflate = "10";
  EXPECT_EQ(Repack(bad_level).code(), Code::kInvalidArgument);
  RepackOptions bad_chunks{.file = Path("in.slab"), .output = Path("out.slab"), .chunks = "0,4"};
  EXPECT_EQ(Repack(bad_chunks).code(), Code::kInvalidArgument);
  RepackOptions bad_filter{.file = Path("in.slab"), .output = Path("out.slab")};
  bad_filter.filters.filters = "zstd";
  EXPECT_EQ(Repack(bad_filter).code(), Code::kInvalidArgument);
  EXPECT_FALSE(fs::exists(Path("out.slab")));
  EXPECT_EQ(CountFiles(), 1u);
}

TEST_F(RepackTest, AFailureHalfWayRemovesThePartialOutput) {
  MakeSource(Path("in.slab"));
  // The group /empty is copied first; then 100000 x 100000 chunks are over
  // the engine's chunk size limit for /filtered.
  Status s = Repack({.file = Path("in.slab"), .output = Path("out.slab"), .chunks = "100000,100000"});
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_FALSE(fs::exists(Path("out.slab")));
  EXPECT_EQ(CountFiles(), 1u);
}

}  // namespace
}  // namespace slabfs::tools
