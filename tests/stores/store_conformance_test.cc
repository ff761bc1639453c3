// One conformance suite for every store (include/slabfs/store.h): the same
// checks, run against the HDF5 store on the files make_fixtures.py makes
// with h5py and netCDF4, and against a slab container holding the same
// tree (made here from the HDF5 store: groups, attributes, and each
// dataset with the same type, shape, chunks and fill, with exactly the
// chunks the HDF5 file stores written). Every store must read what h5py
// reads, byte range by byte range, say which elements are stored the same
// way through Defined, DefinedRuns and StoredChunks, and refuse bad
// requests with the documented codes. The Zarr store runs them on Zarr v2
// stores zarr-python makes from the same files (tests/stores/zarr/
// mirror_hdf5.py: the same dtypes, shapes, chunks, fills and exactly the
// chunks the HDF5 file stores, under a different codec for many arrays):
// made by the native library rather than by `slab export`, so that the
// Zarr store is checked against Zarr as others write it, not against
// slabfs's own writer. A new store joins by adding its factory to
// kStoreKinds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "slabfs/container.h"
#include "slabfs/store.h"
#include "stores/hdf5/hdf5_store.h"
#include "stores/zarr/zarr_store.h"
#include "tests/stores/store_fixtures.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs {
namespace {

namespace fs = std::filesystem;

// Copies group `src_id` of `src` (children, attributes, datasets with their
// stored chunks) into group `dst_id` of container c.
Status Mirror(const Store& src, ObjectId src_id, Container& c, ObjectId dst_id) {
  SLABFS_ASSIGN_OR_RETURN(std::vector<std::string> attrs, src.ListAttributes(src_id));
  for (const std::string& a : attrs) {
    SLABFS_ASSIGN_OR_RETURN(Attribute v, src.GetAttribute(src_id, a));
    SLABFS_RETURN_IF_ERROR(c.SetAttribute(dst_id, a, v));
  }
  if (src_id != kRootId) {
    SLABFS_ASSIGN_OR_RETURN(ObjectInfo info, src.Stat(src_id));
    if (info.kind == ObjectKind::kDataset) return Status::OK();
  }
  SLABFS_ASSIGN_OR_RETURN(std::vector<Entry> children, src.List(src_id));
  SLABFS_ASSIGN_OR_RETURN(std::string dst_path, c.PathOf(dst_id));
  const std::string prefix = dst_path == "/" ? "/" : dst_path + "/";
  for (const Entry& e : children) {
    SLABFS_ASSIGN_OR_RETURN(ObjectInfo info, src.Stat(e.id));
    if (info.kind == ObjectKind::kGroup) {
      SLABFS_ASSIGN_OR_RETURN(ObjectId g, c.MakeGroups(prefix + e.name));
      SLABFS_RETURN_IF_ERROR(Mirror(src, e.id, c, g));
      continue;
    }
    SLABFS_ASSIGN_OR_RETURN(std::shared_ptr<const StoreDataset> sd, src.OpenDataset(e.id));
    const StoreDatasetInfo& si = sd->info();
    DatasetOptions o;
    o.dtype = si.dataset.dtype;
    o.shape = si.dataset.shape;
    o.max_shape = si.dataset.max_shape;
    o.fill = si.dataset.fill;
    if (si.layout == StoreLayout::kChunked) o.chunks = si.dataset.chunks;
    SLABFS_ASSIGN_OR_RETURN(Dataset ds, c.CreateDataset(prefix + e.name, o));
    const size_t item = ItemSize(o.dtype);
    SLABFS_ASSIGN_OR_RETURN(std::vector<StoredChunk> chunks, sd->StoredChunks());
    for (const StoredChunk& k : chunks) {
      Dims start(o.shape.size()), count(o.shape.size());
      bool inside = true;
      for (size_t d = 0; d < o.shape.size(); ++d) {
        const uint64_t chunk = si.layout == StoreLayout::kChunked ? si.dataset.chunks[d] : o.shape[d];
        start[d] = k.coords[d] * chunk;
        inside = inside && start[d] < o.shape[d];
        count[d] = inside ? std::min(chunk, o.shape[d] - start[d]) : 0;
      }
      if (!inside) continue;
      uint64_t n = 1;
      for (uint64_t x : count) n *= x;
      std::string buf(n * item, '\0');
      SLABFS_RETURN_IF_ERROR(sd->Read(Slab::Box(start, count), buf.data()));
      SLABFS_RETURN_IF_ERROR(ds.Write(Slab::Box(start, count), buf.data()));
    }
    SLABFS_RETURN_IF_ERROR(Mirror(src, e.id, c, ds.id()));  // its attributes
  }
  return Status::OK();
}

struct StoreKind {
  const char* name;
  // Opens the store that holds what the HDF5 file `h5` holds, made in `dir`.
  std::function<Result<std::unique_ptr<Store>>(const std::string& h5, const fs::path& dir)> open;
};

const StoreKind kStoreKinds[] = {
    {"hdf5", [](const std::string& h5, const fs::path&) { return stores::OpenHdf5Store(h5); }},
    {"slab",
     [](const std::string& h5, const fs::path& dir) -> Result<std::unique_ptr<Store>> {
       SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<Store> src, stores::OpenHdf5Store(h5));
       const std::string path = (dir / (fs::path(h5).filename().string() + ".slab")).string();
       std::error_code ec;
       fs::remove(path, ec);  // made again for each test
       {
         SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<Container> c, Container::Open(path, {.create = true}));
         SLABFS_RETURN_IF_ERROR_R(Mirror(*src, kRootId, *c, kRootId));
         SLABFS_RETURN_IF_ERROR_R(c->Close());
       }
       return OpenContainerStore(path);
     }},
    {"zarr",
     [](const std::string& h5, const fs::path& dir) -> Result<std::unique_ptr<Store>> {
       // Made once per file: the store is only read.
       const fs::path path = dir / (fs::path(h5).filename().string() + ".zarr");
       if (!fs::exists(path)) {
         const std::string cmd = std::string(SLABFS_PYTHON3) + " " + SLABFS_SOURCE_DIR +
                                 "/tests/stores/zarr/mirror_hdf5.py " + h5 + " " + path.string();
         if (std::system(cmd.c_str()) != 0) return Err(Status::IOError("mirror_hdf5.py failed for " + h5));
       }
       return stores::OpenZarrStore(path.string());
     }},
};

// Whether zarr-python can be imported (the Zarr kind's stores are made with it).
bool HaveZarrPython() {
  static const bool have = [] {
    const std::string cmd = std::string(SLABFS_PYTHON3) + " -c 'import zarr, numcodecs' 2>/dev/null";
    return std::system(cmd.c_str()) == 0;
  }();
  return have;
}

class StoreConformanceTest : public testutil::StoreFixtureSuite<::testing::TestWithParam<StoreKind>> {
 protected:
  void SetUp() override {
    StoreFixtureSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (std::string_view(GetParam().name) == "zarr" && !HaveZarrPython()) GTEST_SKIP() << "zarr is missing";
  }

  // The store of each fixture file, opened once per test; null, with the
  // test failed, when it does not open (ASSERT_STORE stops the test).
  const Store* StoreOf(const std::string& file) {
    auto it = stores_.find(file);
    if (it == stores_.end()) {
      auto s = GetParam().open((*dir_ / file).string(), *dir_);
      if (!s) {
        ADD_FAILURE() << file << " does not open as a " << GetParam().name << " store: " << s.error().ToString();
        return nullptr;
      }
      it = stores_.emplace(file, std::move(*s)).first;
    }
    return it->second.get();
  }

  std::map<std::string, std::unique_ptr<Store>> stores_;
};

// Which elements the boxes cover, as a mask over the dataset.
std::vector<bool> MaskOf(const std::vector<Box>& boxes, const Dims& shape, uint64_t n) {
  std::vector<bool> mask(n, false);
  for (const Box& b : boxes) {
    uint64_t count = 1;
    for (uint64_t c : b.count) count *= c;
    Dims idx(shape.size(), 0);
    for (uint64_t e = 0; e < count; ++e) {
      uint64_t lin = 0;
      for (size_t d = 0; d < shape.size(); ++d) lin = lin * shape[d] + b.start[d] + idx[d];
      EXPECT_FALSE(mask[lin]) << "boxes overlap at element " << lin;
      mask[lin] = true;
      for (size_t d = shape.size(); d-- > 0;) {
        if (++idx[d] < b.count[d]) break;
        idx[d] = 0;
      }
    }
  }
  return mask;
}

TEST_P(StoreConformanceTest, ByteRangesReadAsH5pyReads) {
  std::mt19937_64 rng(11);
  int checked = 0;
  for (const auto& f : testutil::StoreManifest(*dir_, "read")) {
    SCOPED_TRACE(f[1] + " " + f[2]);
    const Store* opened = StoreOf(f[1]);
    ASSERT_NE(opened, nullptr);
    const Store& store = *opened;
    ASSERT_OK_AND_ASSIGN(ObjectId id, store.Resolve(f[2]));
    ASSERT_OK_AND_ASSIGN(ObjectInfo oi, store.Stat(id));
    EXPECT_EQ(oi.kind, ObjectKind::kDataset);
    const std::string expected = testutil::ReadWhole(*dir_ / f[5]);
    EXPECT_EQ(oi.size_bytes, expected.size());
    ASSERT_OK_AND_ASSIGN(auto ds, store.OpenDataset(id));
    EXPECT_EQ(DTypeName(ds->info().dataset.dtype), f[3]);
    const uint64_t size = expected.size();
    for (int i = 0; i < 30; ++i) {
      const uint64_t off = rng() % (size + 8);
      const uint64_t len = 1 + rng() % (std::min<uint64_t>(size, 40000) + 16);
      std::string got(len, '\x5a');
      ASSERT_OK_AND_ASSIGN(size_t n, ds->ReadBytes(off, len, got.data()));
      const uint64_t want = off >= size ? 0 : std::min(len, size - off);
      ASSERT_EQ(n, want) << "[" << off << ", +" << len << ")";
      if (n > 0) {
        EXPECT_TRUE(got.compare(0, n, expected, off, n) == 0) << "[" << off << ", +" << len << ")";
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

TEST_P(StoreConformanceTest, DefinedRunsAndStoredChunksAgree) {
  std::mt19937_64 rng(12);
  for (const auto& f : testutil::StoreManifest(*dir_, "read")) {
    SCOPED_TRACE(f[1] + " " + f[2]);
    const Store* opened = StoreOf(f[1]);
    ASSERT_NE(opened, nullptr);
    const Store& store = *opened;
    ASSERT_OK_AND_ASSIGN(auto ds, store.OpenDataset(std::string_view(f[2])));
    const DatasetInfo& d = ds->info().dataset;
    if (d.num_elements == 0 || d.num_elements > (1u << 22)) continue;
    ASSERT_OK_AND_ASSIGN(std::vector<Box> boxes, ds->Defined(Slab::All(d.shape)));
    const std::vector<bool> mask = MaskOf(boxes, d.shape, d.num_elements);
    ASSERT_OK_AND_ASSIGN(uint64_t defined, ds->CountDefined());
    EXPECT_EQ(defined, static_cast<uint64_t>(std::count(mask.begin(), mask.end(), true)));
    // The stored chunks' elements are the defined ones (no sparse datasets
    // here), and as many chunks are stored as the file stores.
    ASSERT_OK_AND_ASSIGN(std::vector<StoredChunk> chunks, ds->StoredChunks());
    EXPECT_EQ(chunks.size(), std::stoull(f[6]));
    EXPECT_TRUE(std::is_sorted(chunks.begin(), chunks.end(),
                               [](const StoredChunk& a, const StoredChunk& b) { return a.coords < b.coords; }));
    std::vector<Box> chunk_boxes;
    for (const StoredChunk& k : chunks) {
      Box b{Dims(d.shape.size()), Dims(d.shape.size())};
      bool inside = true;
      for (size_t i = 0; i < d.shape.size(); ++i) {
        b.start[i] = k.coords[i] * d.chunks[i];
        inside = inside && b.start[i] < d.shape[i];
        b.count[i] = inside ? std::min(d.chunks[i], d.shape[i] - b.start[i]) : 0;
      }
      if (inside) chunk_boxes.push_back(b);
    }
    EXPECT_TRUE(MaskOf(chunk_boxes, d.shape, d.num_elements) == mask);
    // DefinedRuns over random ranges: sorted, merged, exactly the mask.
    for (int i = 0; i < 12; ++i) {
      const uint64_t first = rng() % d.num_elements;
      const uint64_t count = 1 + rng() % (d.num_elements - first);
      ASSERT_OK_AND_ASSIGN(std::vector<ElementRun> runs, ds->DefinedRuns(first, count));
      std::vector<bool> got(count, false);
      uint64_t prev_end = 0;
      for (size_t r = 0; r < runs.size(); ++r) {
        ASSERT_GE(runs[r].first, first);
        ASSERT_LE(runs[r].first + runs[r].count, first + count);
        ASSERT_GT(runs[r].count, 0u);
        if (r > 0) {
          EXPECT_GT(runs[r].first, prev_end) << "runs not sorted and merged";
        }
        prev_end = runs[r].first + runs[r].count;
        for (uint64_t e = runs[r].first; e < prev_end; ++e) got[e - first] = true;
      }
      EXPECT_TRUE(got == std::vector<bool>(mask.begin() + static_cast<std::ptrdiff_t>(first),
                                           mask.begin() + static_cast<std::ptrdiff_t>(first + count)))
          << "[" << first << ", +" << count << ")";
      // The walk that jumps over holes visits the same elements, in order.
      std::vector<bool> walked(count, false);
      uint64_t walked_end = first;
      ASSERT_OK(ds->ForEachDefinedRun(first, count, [&](const ElementRun& r) {
        EXPECT_GE(r.first, walked_end) << "runs out of order";
        EXPECT_LE(r.first + r.count, first + count);
        for (uint64_t e = r.first; e < r.first + r.count; ++e) walked[e - first] = true;
        walked_end = r.first + r.count;
        return true;
      }));
      EXPECT_TRUE(walked == got) << "walk [" << first << ", +" << count << ")";
      // A visitor that stops is called no more.
      int calls = 0;
      ASSERT_OK(ds->ForEachDefinedRun(first, count, [&](const ElementRun&) { return ++calls < 1; }));
      EXPECT_EQ(calls, runs.empty() ? 0 : 1);
    }
  }
}

TEST_P(StoreConformanceTest, BadRequestsAreRefusedWithTheirCodes) {
  const auto reads = testutil::StoreManifest(*dir_, "read");
  ASSERT_FALSE(reads.empty());
  const Store* opened = StoreOf("basic.h5");
  ASSERT_NE(opened, nullptr);
  const Store& store = *opened;
  ASSERT_OK_AND_ASSIGN(auto ds, store.OpenDataset(std::string_view("/deflate_shuffle")));
  const DatasetInfo& d = ds->info().dataset;
  std::string buf(64, '\0');
  EXPECT_CODE(ds->ReadElements(d.num_elements, 1, buf.data()), Code::kInvalidArgument);
  EXPECT_CODE(ds->DefinedRuns(d.num_elements - 1, 2), Code::kInvalidArgument);
  EXPECT_CODE(ds->ForEachDefinedRun(d.num_elements - 1, 2, [](const ElementRun&) { return true; }),
              Code::kInvalidArgument);
  // The walk's check stops it with the check's error (an interrupted lseek).
  EXPECT_CODE(
      ds->ForEachDefinedRun(
          0, d.num_elements, [](const ElementRun&) { return true; }, [] { return Status::Busy("interrupted"); }),
      Code::kBusy);
  EXPECT_CODE(ds->Read(Slab::Box({0}, {1}), buf.data()), Code::kInvalidArgument);  // wrong rank
  EXPECT_CODE(ds->Read(Slab::Box({d.shape[0], 0}, {1, 1}), buf.data()), Code::kInvalidArgument);
  ASSERT_OK_AND_ASSIGN(size_t n, ds->ReadBytes(d.size_bytes, 10, buf.data()));
  EXPECT_EQ(n, 0u);
  EXPECT_CODE(store.Resolve("/no/such/thing"), Code::kNotFound);
  EXPECT_CODE(store.Lookup(kRootId, "missing"), Code::kNotFound);
  EXPECT_CODE(store.OpenDataset(kRootId), Code::kNotADataset);
  ASSERT_OK_AND_ASSIGN(ObjectId id, store.Resolve("/deflate_shuffle"));
  EXPECT_CODE(store.List(id), Code::kNotAGroup);
  EXPECT_CODE(store.GetAttribute(id, "no such attribute"), Code::kNotFound);
}

TEST_P(StoreConformanceTest, TreesAndAttributesMatchTheHdf5Files) {
  // Each store shows the tree and attributes the HDF5 store shows.
  for (const char* file : {"basic.h5"}) {
    SCOPED_TRACE(file);
    const Store* opened = StoreOf(file);
    ASSERT_NE(opened, nullptr);
    const Store& store = *opened;
    ASSERT_OK_AND_ASSIGN(auto h5, stores::OpenHdf5Store((*dir_ / file).string()));
    std::function<void(ObjectId, ObjectId)> compare = [&](ObjectId a, ObjectId b) {
      ASSERT_OK_AND_ASSIGN(std::vector<std::string> aa, store.ListAttributes(a));
      ASSERT_OK_AND_ASSIGN(std::vector<std::string> ba, h5->ListAttributes(b));
      EXPECT_EQ(aa, ba);
      for (const std::string& name : aa) {
        EXPECT_EQ(store.GetAttribute(a, name).value().ToText(), h5->GetAttribute(b, name).value().ToText()) << name;
      }
      ASSERT_OK_AND_ASSIGN(ObjectInfo ai, store.Stat(a));
      ASSERT_OK_AND_ASSIGN(ObjectInfo bi, h5->Stat(b));
      ASSERT_EQ(ai.kind, bi.kind);
      if (ai.kind != ObjectKind::kGroup) return;
      ASSERT_OK_AND_ASSIGN(std::vector<Entry> ac, store.List(a));
      ASSERT_OK_AND_ASSIGN(std::vector<Entry> bc, h5->List(b));
      ASSERT_EQ(ac.size(), bc.size());
      EXPECT_EQ(ai.num_children, ac.size());
      for (size_t i = 0; i < ac.size(); ++i) {
        EXPECT_EQ(ac[i].name, bc[i].name);
        EXPECT_EQ(store.PathOf(ac[i].id).value(), h5->PathOf(bc[i].id).value());
        compare(ac[i].id, bc[i].id);
      }
    };
    compare(kRootId, kRootId);
  }
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreConformanceTest, ::testing::ValuesIn(kStoreKinds),
                         [](const ::testing::TestParamInfo<StoreKind>& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace slabfs
