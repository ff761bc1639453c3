// slab erase and slab defined on real containers in a temporary directory,
// against a brute-force reference (a defined mask), and mkdset/import
// --sparse; every refusal leaves the container file as it was.
#include "tools/cmd_sparse.h"

#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <boost/filesystem.hpp>

#include "slabfs/container.h"
#include "slabfs/slice.h"
#include "tests/testutil/status_matchers.h"
#include "tools/cmd_list.h"
#include "tools/cmd_transfer.h"
#include "tools/cmd_tree.h"
#include "tools/describe.h"

namespace slabfs::tools {
namespace {
namespace fs = boost::filesystem;

using Point = std::vector<uint64_t>;

class SparseCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fs::unique_path("slab-sparse-%%%%-%%%%");
    fs::create_directories(dir_);
    file_ = (dir_ / "c.slab").string();
    ASSERT_OK(RunCreate({.file = file_}, sink_));
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Mkdset(const std::string& path, const std::string& shape, const std::string& chunks, bool sparse) {
    MkdsetOptions o;
    o.file = file_;
    o.path = path;
    o.dtype = "u2";
    o.shape = shape;
    o.chunks = chunks;
    o.fill = "7";
    o.sparse = sparse;
    ASSERT_OK(RunMkdset(o, sink_));
  }

  // Writes the value 1 into the selection `slice` of `path` and commits.
  void WriteSlice(const std::string& path, const std::string& slice) {
    auto c = Container::Open(file_);
    ASSERT_OK(c);
    ASSERT_OK_AND_ASSIGN(Dataset ds, (*c)->OpenDataset(path));
    ASSERT_OK_AND_ASSIGN(Slab sel, ParseSlice(slice, ds.info().shape));
    std::vector<uint16_t> ones(sel.num_elements(), 1);
    if (!ones.empty()) ASSERT_OK(ds.Write(sel, ones.data()));
    ASSERT_OK((*c)->Close());
  }

  Result<Json> DefinedJson(const std::string& path, std::optional<std::string> slice) {
    std::ostringstream out;
    SLABFS_RETURN_IF_ERROR_R(RunDefined({.file = file_, .path = path, .slice = std::move(slice), .json = true}, out));
    return Json::parse(out.str());
  }

  std::string DefinedText(const std::string& path, std::optional<std::string> slice = {}) {
    std::ostringstream out;
    Status s = RunDefined({.file = file_, .path = path, .slice = std::move(slice)}, out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out.str();
  }

  Status Erase(const std::string& path, const std::string& slice) {
    return RunErase({.file = file_, .path = path, .slice = slice}, sink_);
  }

  size_t FileHash() const {
    std::ifstream f(file_, std::ios::binary);
    std::ostringstream bytes;
    bytes << f.rdbuf();
    return std::hash<std::string>{}(bytes.str());
  }

  // What a reader can observe of the container: the tree, every dataset's
  // description, defined boxes and elements. (Opening for writing rewrites
  // the lock record, so the file's bytes are not the measure.)
  std::string Observable() {
    std::ostringstream out;
    LsOptions ls{.file = file_, .path = "/", .long_format = true, .recursive = true};
    EXPECT_OK(RunLs(ls, out));
    auto c = Container::Open(file_, {.read_only = true});
    EXPECT_TRUE(c.has_value());
    if (!c) return out.str();
    for (const char* path : {"/s", "/d"}) {
      auto ds = (*c)->OpenDataset(path);
      if (!ds) continue;
      EXPECT_OK(RunInfo({.file = file_, .path = path, .json = true}, out));
      out << DefinedText(path);
      std::string bytes(ds->size_bytes(), '\0');
      EXPECT_OK(ds->ReadElements(0, ds->num_elements(), bytes.data()));
      out << std::hash<std::string>{}(bytes) << '\n';
    }
    return out.str();
  }

  fs::path dir_;
  std::string file_;
  std::ostringstream sink_;
};

// Every element a selection holds.
std::set<Point> Elements(const Slab& s) {
  std::set<Point> out;
  if (s.num_elements() == 0) return out;
  Point p(s.dims.size());
  std::vector<uint64_t> i(s.dims.size(), 0);
  for (;;) {
    for (size_t d = 0; d < p.size(); ++d) p[d] = s.dims[d].start + i[d] * s.dims[d].stride;
    out.insert(p);
    size_t d = p.size();
    while (d > 0) {
      --d;
      if (++i[d] < s.dims[d].count) break;
      i[d] = 0;
      if (d == 0) return out;
    }
  }
}

// The elements of a `defined --json` answer, checking that its boxes are
// disjoint, non-empty and in C order of their first element.
std::set<Point> JsonElements(const Json& j) {
  std::set<Point> out;
  Point last_start;
  uint64_t total = 0;
  for (const Json& b : j["boxes"]) {
    Slab s;
    const Point start = b["start"].get<Point>();
    const Point count = b["count"].get<Point>();
    const Point step = b.contains("step") ? b["step"].get<Point>() : Point(start.size(), 1);
    for (size_t d = 0; d < start.size(); ++d) {
      EXPECT_GE(count[d], 1u);
      s.dims.push_back({.start = start[d], .stride = step[d], .count = count[d], .block = 1});
    }
    EXPECT_TRUE(last_start.empty() || last_start < start) << j.dump();
    last_start = start;
    for (const Point& p : Elements(s)) EXPECT_TRUE(out.insert(p).second) << "overlap in " << j.dump();
    total += s.num_elements();
  }
  EXPECT_EQ(j["elements"].get<uint64_t>(), total);
  return out;
}

TEST_F(SparseCommandsTest, DefinedListsWrittenBoxes) {
  Mkdset("/s", "20,30", "8,8", true);
  EXPECT_EQ(DefinedText("/s"), "0 elements defined in 0 boxes\n");
  WriteSlice("/s", "10:12, 0:5");
  EXPECT_EQ(DefinedText("/s"), "[10:12, 0:5]\n10 elements defined in 1 box\n");
  ASSERT_OK_AND_ASSIGN(Json j, DefinedJson("/s", std::nullopt));
  EXPECT_EQ(j.dump(), R"({"boxes":[{"start":[10,0],"count":[2,5]}],"elements":10})");
  WriteSlice("/s", "19, 29");
  ASSERT_OK_AND_ASSIGN(j, DefinedJson("/s", "11:, 4:"));
  EXPECT_EQ(JsonElements(j), (std::set<Point>{{11, 4}, {19, 29}}));
  EXPECT_EQ(DefinedText("/s", "0, :"), "0 elements defined in 0 boxes\n");
  EXPECT_EQ(DefinedText("/s", "-1"), "[19:20, 29:30]\n1 element defined in 1 box\n");
  EXPECT_EQ(DefinedText("/s", "5:5"), "0 elements defined in 0 boxes\n");
}

TEST_F(SparseCommandsTest, StridedSelectionsKeepTheirSteps) {
  Mkdset("/s", "20,30", "8,8", true);
  WriteSlice("/s", "10:20, 0:5");
  EXPECT_EQ(DefinedText("/s", "::2, 1"), "[10:19:2, 1:2]\n5 elements defined in 1 box\n");
  ASSERT_OK_AND_ASSIGN(Json j, DefinedJson("/s", "::3, ::2"));
  EXPECT_EQ(j.dump(), R"({"boxes":[{"start":[12,0],"count":[3,3],"step":[3,2]}],"elements":9})");
  // One index per box: step 1 there.
  ASSERT_OK_AND_ASSIGN(j, DefinedJson("/s", "19::5, ::4"));
  EXPECT_EQ(j.dump(), R"({"boxes":[{"start":[19,0],"count":[1,2],"step":[1,4]}],"elements":2})");
}

// Random writes and erases, including strided ones, against a mask; every
// defined query, strided or not, gives exactly the defined elements it
// selects.
TEST_F(SparseCommandsTest, MatchesAReferenceMask) {
  const Dims shape{13, 17, 5};
  Mkdset("/s", "13,17,5", "4,6,5", true);
  std::set<Point> defined;
  std::mt19937_64 rng(5);
  auto pick = [&rng](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  auto random_slice = [&]() {
    std::string text;
    for (size_t d = 0; d < shape.size(); ++d) {
      const int64_t n = static_cast<int64_t>(shape[d]);
      std::string item;
      switch (pick(0, 4)) {
        case 0: item = fmt::format("{}", pick(-n, n - 1)); break;
        case 1: item = ":"; break;
        case 2: item = fmt::format("{}:{}", pick(-n, n), pick(-n, n + 2)); break;
        default: item = fmt::format("{}:{}:{}", pick(0, n), pick(0, n + 2), pick(1, 4)); break;
      }
      text += (text.empty() ? "" : ",") + item;
    }
    return text;
  };
  for (int round = 0; round < 40; ++round) {
    const std::string slice = random_slice();
    ASSERT_OK_AND_ASSIGN(Slab sel, ParseSlice(slice, shape));
    const std::set<Point> selected = Elements(sel);
    if (pick(0, 2) != 0) {
      WriteSlice("/s", slice);
      defined.insert(selected.begin(), selected.end());
    } else {
      ASSERT_OK(Erase("/s", slice));
      for (const Point& p : selected) defined.erase(p);
    }
    const std::string query = random_slice();
    ASSERT_OK_AND_ASSIGN(Slab qsel, ParseSlice(query, shape));
    std::set<Point> want;
    for (const Point& p : Elements(qsel)) {
      if (defined.contains(p)) want.insert(p);
    }
    ASSERT_OK_AND_ASSIGN(Json j, DefinedJson("/s", query));
    EXPECT_EQ(JsonElements(j), want) << "round " << round << ": " << slice << " then " << query;
    ASSERT_OK_AND_ASSIGN(Json all, DefinedJson("/s", std::nullopt));
    EXPECT_EQ(JsonElements(all), defined) << "round " << round;
  }
}

TEST_F(SparseCommandsTest, EraseReadsAsFill) {
  Mkdset("/s", "6,4", "3,2", true);
  WriteSlice("/s", ":");
  ASSERT_OK(Erase("/s", "1:5:2, 1:"));
  auto c = Container::Open(file_, {.read_only = true});
  ASSERT_OK(c);
  ASSERT_OK_AND_ASSIGN(Dataset ds, (*c)->OpenDataset("/s"));
  std::vector<uint16_t> all(24);
  ASSERT_OK(ds.ReadElements(0, all.size(), all.data()));
  for (uint64_t r = 0; r < 6; ++r) {
    for (uint64_t k = 0; k < 4; ++k) {
      const bool erased = (r == 1 || r == 3) && k >= 1;
      EXPECT_EQ(all[r * 4 + k], erased ? 7 : 1) << r << "," << k;
    }
  }
  EXPECT_EQ(ds.info().defined_elements, 24u - 6u);
}

TEST_F(SparseCommandsTest, DenseDatasetsAnswerWithStoredChunks) {
  Mkdset("/d", "20,30", "8,8", false);
  WriteSlice("/d", "9, 9");
  EXPECT_EQ(DefinedText("/d"), "[8:16, 8:16]\n64 elements defined in 1 box\n");
  EXPECT_EQ(DefinedText("/d", "10:12, 12:"), "[10:12, 12:16]\n8 elements defined in 1 box\n");
  // Erasing a whole chunk frees it.
  ASSERT_OK(Erase("/d", "8:16, 8:16"));
  EXPECT_EQ(DefinedText("/d"), "0 elements defined in 0 boxes\n");
}

TEST_F(SparseCommandsTest, EmptyEraseChangesNothing) {
  Mkdset("/s", "20,30", "8,8", true);
  WriteSlice("/s", "3:5, 3:5");
  const std::string before = Observable();
  const size_t bytes = FileHash();
  ASSERT_OK(Erase("/s", "5:5"));
  ASSERT_OK(Erase("/s", "3, 30:"));
  EXPECT_EQ(Observable(), before);
  // Not even the lock record is rewritten.
  EXPECT_EQ(FileHash(), bytes);
}

TEST_F(SparseCommandsTest, RefusalsLeaveTheFileUnchanged) {
  Mkdset("/s", "20,30", "8,8", true);
  WriteSlice("/s", "3:5, 3:5");
  ASSERT_OK(RunMkgroup({.file = file_, .path = "/g"}, sink_));
  const std::string before = Observable();
  const size_t bytes = FileHash();
  struct Case {
    const char* path;
    const char* slice;
    Code code;
    const char* reason;
  };
  for (const Case& c : {
           Case{"/s", "1,,2", Code::kInvalidArgument, "item 2 is empty"},
           Case{"/s", "::0", Code::kInvalidArgument, "step cannot be zero"},
           Case{"/s", "::-1", Code::kInvalidArgument, "negative steps"},
           Case{"/s", "20", Code::kInvalidArgument, "out of range for dimension 0"},
           Case{"/s", "1,2,3", Code::kInvalidArgument, "rank 2"},
           Case{"/s", "x", Code::kInvalidArgument, "'x'"},
           Case{"/s", "", Code::kInvalidArgument, "empty"},
           Case{"/g", ":", Code::kNotADataset, "/g"},
           Case{"/nope", ":", Code::kNotFound, "/nope"},
           Case{"nope", ":", Code::kInvalidArgument, "absolute"},
       }) {
    Status s = Erase(c.path, c.slice);
    EXPECT_EQ(s.code(), c.code) << c.path << " " << c.slice << ": " << s.ToString();
    EXPECT_NE(s.message().find(c.reason), std::string::npos) << s.message();
    std::ostringstream out;
    s = RunDefined({.file = file_, .path = c.path, .slice = std::string(c.slice)}, out);
    EXPECT_EQ(s.code(), c.code) << c.path << " " << c.slice << ": " << s.ToString();
    EXPECT_EQ(out.str(), "");
  }
  EXPECT_EQ(Observable(), before);
  EXPECT_EQ(FileHash(), bytes);
}

TEST_F(SparseCommandsTest, BadSliceIsRefusedBeforeTheFileIsOpened) {
  const std::string missing = (dir_ / "missing.slab").string();
  Status s = RunErase({.file = missing, .path = "/s", .slice = "1,,2"}, sink_);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  s = RunErase({.file = missing, .path = "/s", .slice = ":"}, sink_);
  EXPECT_EQ(s.code(), Code::kNotFound) << s.ToString();
  EXPECT_FALSE(fs::exists(missing));
  std::ostringstream out;
  s = RunDefined({.file = missing, .path = "/s"}, out);
  EXPECT_EQ(s.code(), Code::kNotFound) << s.ToString();
}

TEST_F(SparseCommandsTest, EraseWaitsForNoWriter) {
  Mkdset("/s", "20,30", "8,8", true);
  WriteSlice("/s", ":");
  auto holder = Container::Open(file_);
  ASSERT_OK(holder);
  Status s = Erase("/s", ":");
  EXPECT_EQ(s.code(), Code::kBusy) << s.ToString();
  // Reading needs no lock.
  EXPECT_EQ(DefinedText("/s"), "[0:20, 0:30]\n600 elements defined in 1 box\n");
  ASSERT_OK((*holder)->Close());
}

TEST_F(SparseCommandsTest, MkdsetAndImportCreateSparseDatasets) {
  Mkdset("/s", "4,4", "", true);
  Mkdset("/d", "4,4", "", false);
  InfoOptions io{.file = file_, .path = "/s", .json = true};
  std::ostringstream out;
  ASSERT_OK(RunInfo(io, out));
  Json j = Json::parse(out.str());
  EXPECT_EQ(j["sparse"], true);
  EXPECT_EQ(j["defined_elements"], 0);
  out.str("");
  io.path = "/d";
  ASSERT_OK(RunInfo(io, out));
  EXPECT_EQ(Json::parse(out.str())["sparse"], false);

  const std::string raw = (dir_ / "in.raw").string();
  {
    std::ofstream f(raw, std::ios::binary);
    std::string bytes(32, '\x02');
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  ImportOptions im;
  im.file = file_;
  im.path = "/imp";
  im.input = raw;
  im.create = true;
  im.dtype = "u2";
  im.shape = "4,4";
  im.sparse = true;
  ASSERT_OK(RunImport(im, sink_));
  out.str("");
  ASSERT_OK(RunInfo({.file = file_, .path = "/imp"}, out));
  EXPECT_NE(out.str().find("sparse: yes\n"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("defined_elements: 16\n"), std::string::npos) << out.str();

  // --sparse without --create is refused.
  im.create = false;
  im.dtype = im.shape = "";
  Status s = RunImport(im, sink_);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("--sparse"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace slabfs::tools
