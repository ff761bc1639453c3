// bench_cache: the chunk cache against libhdf5's on the sliding-window
// experiment of HDF5's notes on the raw data chunk cache (shared/seeds/001):
// a 2000 x 2000 dataset of 4-byte integers in 100 x 100 chunks, a cache of
// 25 chunks (or each library's defaults), and a W x W window moved across
// the dataset in row-major order, first writing every element (from a cold
// cache, in a fresh file) and then reading them all back (from a fresh
// open, cold cache). Efficiency is the seed's: bytes the application asked
// for divided by chunk bytes moved to or from the file (reads and writes,
// through the commit or close). 1.00 means every chunk went to the file
// once and was never read back; below 1, chunks were written back while
// still being filled, or read again after they were evicted.
//
// Chunks go through a filter so that both libraries move whole chunks
// through their caches: for slabfs the CRC-32C checksum (--filter), for
// libhdf5 a registered filter that only counts the bytes passing through
// (the seed's own method). With --filter none slabfs moves unfiltered
// chunks (reads of those bypass the cache, see docs/architecture.md).
//
// For each W: rounds of (slabfs, libhdf5) interleaved; efficiencies are
// the same every round, the times of the write and read passes (the write
// through slabfs's commit, and libhdf5's close and an fsync) are printed
// as min/median/max, and the ratio is libhdf5's median time over slabfs's
// (above 1: slabfs is faster).
//
//   bench_cache [--path P] [--windows '10;40;64;125;150;250'] [--rounds 3]
//               [--cache chunks25|default] [--filter checksum|none]
//
// Then a second table, cached windows: --random-windows (default 20000)
// random 64 x 64 windows read from the same 2000 x 2000 dataset written
// without filters and with shuffle + deflate 1, with a cache that holds all of it (64 MiB for both;
// libhdf5 with 10007 slots), one thread, after one warm-up pass: the cost
// of serving small reads from chunks already in memory.
//
// libhdf5 is compared when CMake found it (libhdf5-dev); otherwise only
// slabfs's columns are printed.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "slabfs/slabfs.h"

#ifdef SLABFS_BENCH_HDF5
#include <hdf5.h>
#endif

using namespace slabfs;
using bench::Clock;
using bench::Format;
using bench::Seconds;
using bench::Spread;
using bench::SpreadOf;

namespace {

constexpr uint64_t kN = 2000;
constexpr uint64_t kChunk = 100;
constexpr uint64_t kItem = 4;
constexpr uint64_t kChunkBytes = kChunk * kChunk * kItem;
constexpr uint64_t kCacheChunks = 25;

struct Config {
  std::string path = "/tmp/slabfs_bench_cache";
  std::vector<uint64_t> windows = {10, 40, 64, 125, 150, 250};
  uint64_t rounds = 3;
  bool default_cache = false;
  std::string filter = "checksum";
  uint64_t random_windows = 20000;
};

// One pass: efficiency and seconds.
struct Pass {
  double efficiency = 0;
  double seconds = 0;
};

struct Result2 {
  Pass write, read;
};

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "bench_cache: %s\n", what.c_str());
  std::exit(1);
}

[[noreturn]] void Usage() {
  std::fprintf(stderr,
               "usage: bench_cache [--path P] [--windows '10;40;64;125;150;250'] [--rounds 3]\n"
               "                   [--cache chunks25|default] [--filter checksum|none]\n"
               "                   [--random-windows 20000]\n");
  std::exit(2);
}

// The value of element (i, j): every read is checked.
int32_t Value(uint64_t i, uint64_t j) { return static_cast<int32_t>(i * 7919 + j * 31 + 1); }

// Calls fn(r0, c0, rows, cols) for each window position, row-major.
template <typename Fn>
void ForEachWindow(uint64_t w, Fn fn) {
  for (uint64_t r = 0; r < kN; r += w)
    for (uint64_t c = 0; c < kN; c += w) fn(r, c, std::min(w, kN - r), std::min(w, kN - c));
}

void FillWindow(uint64_t r0, uint64_t c0, uint64_t rows, uint64_t cols, int32_t* buf) {
  for (uint64_t i = 0; i < rows; ++i)
    for (uint64_t j = 0; j < cols; ++j) buf[i * cols + j] = Value(r0 + i, c0 + j);
}

void CheckWindow(uint64_t r0, uint64_t c0, uint64_t rows, uint64_t cols, const int32_t* buf) {
  for (uint64_t i = 0; i < rows; ++i)
    for (uint64_t j = 0; j < cols; ++j)
      if (buf[i * cols + j] != Value(r0 + i, c0 + j))
        Die("wrong value at " + std::to_string(r0 + i) + "," + std::to_string(c0 + j));
}

constexpr double kRequested = static_cast<double>(kN * kN * kItem);

// ---------------------------------------------------------------- slabfs

Result2 RunSlabfs(const Config& cfg, uint64_t w) {
  const std::string path = cfg.path + ".slab";
  unlink(path.c_str());
  const uint64_t cache = cfg.default_cache ? OpenOptions{}.cache_bytes : kCacheChunks * kChunkBytes;
  Result2 out;
  std::vector<int32_t> buf(w * w);
  {
    auto t0 = Clock::now();
    auto c = Container::Open(path, {.create = true, .cache_bytes = cache});
    if (!c) Die("create: " + c.error().ToString());
    DatasetOptions o{.dtype = DType::kI4, .shape = {kN, kN}, .chunks = {kChunk, kChunk}};
    if (cfg.filter != "none") o.filters = cfg.filter;
    auto ds = (*c)->CreateDataset("/data", o);
    if (!ds) Die("create dataset: " + ds.error().ToString());
    ForEachWindow(w, [&](uint64_t r, uint64_t q, uint64_t rows, uint64_t cols) {
      FillWindow(r, q, rows, cols, buf.data());
      Status s = ds->Write(Slab::Box({r, q}, {rows, cols}), buf.data());
      if (!s.ok()) Die("write: " + s.ToString());
    });
    Status s = (*c)->Commit();
    if (!s.ok()) Die("commit: " + s.ToString());
    CacheStats st = (*c)->cache_stats();
    out.write.seconds = Seconds(t0, Clock::now());
    out.write.efficiency = kRequested / static_cast<double>(st.bytes_read + st.bytes_written);
  }
  {
    auto t0 = Clock::now();
    auto c = Container::Open(path, {.read_only = true, .cache_bytes = cache});
    if (!c) Die("open: " + c.error().ToString());
    auto ds = (*c)->OpenDataset("/data");
    if (!ds) Die("open dataset: " + ds.error().ToString());
    ForEachWindow(w, [&](uint64_t r, uint64_t q, uint64_t rows, uint64_t cols) {
      Status s = ds->Read(Slab::Box({r, q}, {rows, cols}), buf.data());
      if (!s.ok()) Die("read: " + s.ToString());
      CheckWindow(r, q, rows, cols, buf.data());
    });
    CacheStats st = (*c)->cache_stats();
    out.read.seconds = Seconds(t0, Clock::now());
    out.read.efficiency = kRequested / static_cast<double>(st.bytes_read);
  }
  unlink(path.c_str());
  return out;
}

// ---------------------------------------------------------------- libhdf5

#ifdef SLABFS_BENCH_HDF5
constexpr H5Z_filter_t kCountFilter = 300;
uint64_t g_h5_read = 0, g_h5_written = 0;

size_t CountFilter(unsigned int flags, size_t, const unsigned int*, size_t nbytes, size_t*, void**) {
  if (flags & H5Z_FLAG_REVERSE)
    g_h5_read += nbytes;
  else
    g_h5_written += nbytes;
  return nbytes;
}

void RegisterCountFilter() {
  static const H5Z_class2_t kClass = {H5Z_CLASS_T_VERS, kCountFilter, 1,       1,
                                      "count bytes",    nullptr,      nullptr, CountFilter};
  if (H5Zregister(&kClass) < 0) Die("H5Zregister");
}

Result2 RunHdf5(const Config& cfg, uint64_t w) {
  const std::string path = cfg.path + ".h5";
  unlink(path.c_str());
  Result2 out;
  std::vector<int32_t> buf(w * w);
  const hsize_t dims[2] = {kN, kN}, chunk[2] = {kChunk, kChunk};
  hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
  // 25 chunks: the seed's byte limit, with HDF5's default slot count and w0.
  if (!cfg.default_cache) H5Pset_chunk_cache(dapl, 521, kCacheChunks * kChunkBytes, 0.75);
  auto window = [&](hid_t ds, uint64_t r, uint64_t q, uint64_t rows, uint64_t cols, hid_t* fs, hid_t* ms) {
    *fs = H5Dget_space(ds);
    const hsize_t start[2] = {r, q}, count[2] = {rows, cols};
    H5Sselect_hyperslab(*fs, H5S_SELECT_SET, start, nullptr, count, nullptr);
    *ms = H5Screate_simple(2, count, nullptr);
  };
  {
    g_h5_read = g_h5_written = 0;
    auto t0 = Clock::now();
    hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t space = H5Screate_simple(2, dims, nullptr);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    H5Pset_filter(dcpl, kCountFilter, H5Z_FLAG_MANDATORY, 0, nullptr);
    hid_t ds = H5Dcreate2(f, "data", H5T_STD_I32LE, space, H5P_DEFAULT, dcpl, dapl);
    if (ds < 0) Die("H5Dcreate2");
    ForEachWindow(w, [&](uint64_t r, uint64_t q, uint64_t rows, uint64_t cols) {
      FillWindow(r, q, rows, cols, buf.data());
      hid_t fs, ms;
      window(ds, r, q, rows, cols, &fs, &ms);
      if (H5Dwrite(ds, H5T_NATIVE_INT32, ms, fs, H5P_DEFAULT, buf.data()) < 0) Die("H5Dwrite");
      H5Sclose(ms);
      H5Sclose(fs);
    });
    H5Dclose(ds);
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Fflush(f, H5F_SCOPE_GLOBAL);
    H5Fclose(f);
    if (!bench::FsyncPath(path)) Die("fsync " + path);  // slabfs's commit syncs too
    out.write.seconds = Seconds(t0, Clock::now());
    out.write.efficiency = kRequested / static_cast<double>(g_h5_read + g_h5_written);
  }
  {
    g_h5_read = g_h5_written = 0;
    auto t0 = Clock::now();
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t ds = H5Dopen2(f, "data", dapl);
    if (ds < 0) Die("H5Dopen2");
    ForEachWindow(w, [&](uint64_t r, uint64_t q, uint64_t rows, uint64_t cols) {
      hid_t fs, ms;
      window(ds, r, q, rows, cols, &fs, &ms);
      if (H5Dread(ds, H5T_NATIVE_INT32, ms, fs, H5P_DEFAULT, buf.data()) < 0) Die("H5Dread");
      H5Sclose(ms);
      H5Sclose(fs);
      CheckWindow(r, q, rows, cols, buf.data());
    });
    H5Dclose(ds);
    H5Fclose(f);
    out.read.seconds = Seconds(t0, Clock::now());
    out.read.efficiency = kRequested / static_cast<double>(g_h5_read);
  }
  H5Pclose(dapl);
  unlink(path.c_str());
  return out;
}
#endif

// ------------------------------------------------------- cached windows

constexpr uint64_t kWin = 64;
constexpr uint64_t kWindowCache = 64ull << 20;

std::vector<std::pair<uint64_t, uint64_t>> WindowCorners(uint64_t count) {
  std::vector<std::pair<uint64_t, uint64_t>> out(count);
  uint64_t x = 12345;
  for (auto& [r, q] : out) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    r = (x >> 33) % (kN - kWin);
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    q = (x >> 33) % (kN - kWin);
  }
  return out;
}

// Seconds for the windows after a warm-up pass over the same windows.
double SlabfsWindows(const Config& cfg, const std::vector<std::pair<uint64_t, uint64_t>>& corners, bool deflate) {
  const std::string path = cfg.path + ".w.slab";
  unlink(path.c_str());
  {
    auto c = Container::Open(path, {.create = true});
    if (!c) Die("create: " + c.error().ToString());
    auto ds = (*c)->CreateDataset("/data", {.dtype = DType::kI4,
                                            .shape = {kN, kN},
                                            .chunks = {kChunk, kChunk},
                                            .filters = deflate ? "shuffle,deflate=1" : ""});
    if (!ds) Die("create dataset: " + ds.error().ToString());
    std::vector<int32_t> all(kN * kN);
    FillWindow(0, 0, kN, kN, all.data());
    if (Status s = ds->Write(Slab::All({kN, kN}), all.data()); !s.ok()) Die("write: " + s.ToString());
  }
  auto c = Container::Open(path, {.read_only = true, .cache_bytes = kWindowCache});
  if (!c) Die("open: " + c.error().ToString());
  auto ds = (*c)->OpenDataset("/data");
  if (!ds) Die("open dataset: " + ds.error().ToString());
  std::vector<int32_t> buf(kWin * kWin);
  double seconds = 0;
  for (int pass = 0; pass < 2; ++pass) {
    auto t0 = Clock::now();
    for (auto [r, q] : corners) {
      if (Status s = ds->Read(Slab::Box({r, q}, {kWin, kWin}), buf.data()); !s.ok()) Die("read: " + s.ToString());
    }
    seconds = Seconds(t0, Clock::now());
    CheckWindow(corners.back().first, corners.back().second, kWin, kWin, buf.data());
  }
  unlink(path.c_str());
  return seconds;
}

#ifdef SLABFS_BENCH_HDF5
double Hdf5Windows(const Config& cfg, const std::vector<std::pair<uint64_t, uint64_t>>& corners, bool deflate) {
  const std::string path = cfg.path + ".w.h5";
  unlink(path.c_str());
  const hsize_t dims[2] = {kN, kN}, chunk[2] = {kChunk, kChunk};
  {
    hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t space = H5Screate_simple(2, dims, nullptr);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    if (deflate) {
      H5Pset_shuffle(dcpl);
      H5Pset_deflate(dcpl, 1);
    }
    hid_t ds = H5Dcreate2(f, "data", H5T_STD_I32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    std::vector<int32_t> all(kN * kN);
    FillWindow(0, 0, kN, kN, all.data());
    if (H5Dwrite(ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data()) < 0) Die("H5Dwrite");
    H5Dclose(ds);
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Fclose(f);
  }
  hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
  H5Pset_chunk_cache(dapl, 10007, kWindowCache, 0.75);
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t ds = H5Dopen2(f, "data", dapl);
  std::vector<int32_t> buf(kWin * kWin);
  const hsize_t count[2] = {kWin, kWin};
  hid_t ms = H5Screate_simple(2, count, nullptr);
  double seconds = 0;
  for (int pass = 0; pass < 2; ++pass) {
    auto t0 = Clock::now();
    for (auto [r, q] : corners) {
      hid_t fs = H5Dget_space(ds);
      const hsize_t start[2] = {r, q};
      H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, nullptr, count, nullptr);
      if (H5Dread(ds, H5T_NATIVE_INT32, ms, fs, H5P_DEFAULT, buf.data()) < 0) Die("H5Dread");
      H5Sclose(fs);
    }
    seconds = Seconds(t0, Clock::now());
    CheckWindow(corners.back().first, corners.back().second, kWin, kWin, buf.data());
  }
  H5Sclose(ms);
  H5Dclose(ds);
  H5Fclose(f);
  H5Pclose(dapl);
  unlink(path.c_str());
  return seconds;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  bench::Args args(argc, argv, "bench_cache", Usage);
  while (args.Next()) {
    if (args.Is("--path"))
      cfg.path = args.Value();
    else if (args.Is("--rounds"))
      cfg.rounds = args.Number();
    else if (args.Is("--windows")) {
      cfg.windows.clear();
      for (const std::string& s : bench::SplitList(args.Value())) {
        const uint64_t w = std::strtoull(s.c_str(), nullptr, 10);
        if (w == 0 || w > kN) Usage();
        cfg.windows.push_back(w);
      }
    } else if (args.Is("--cache")) {
      const std::string v = args.Value();
      if (v == "default")
        cfg.default_cache = true;
      else if (v != "chunks25")
        Usage();
    } else if (args.Is("--random-windows")) {
      cfg.random_windows = args.Number();
    } else if (args.Is("--filter")) {
      cfg.filter = args.Value();
      if (cfg.filter != "none" && cfg.filter != "checksum") Usage();
    } else {
      args.Bad();
    }
  }
#ifdef SLABFS_BENCH_HDF5
  RegisterCountFilter();
  unsigned maj = 0, min = 0, rel = 0;
  H5get_libversion(&maj, &min, &rel);
  char peer[64];
  std::snprintf(peer, sizeof peer, "libhdf5 %u.%u.%u", maj, min, rel);
#else
  const char* peer = "libhdf5 not built (install libhdf5-dev)";
#endif
  bench::PrintMachine("bench_cache");
  std::printf("# %llu x %llu i4, %llu x %llu chunks, cache %s, slabfs filter %s, peer %s, %llu rounds interleaved\n",
              static_cast<unsigned long long>(kN), static_cast<unsigned long long>(kN),
              static_cast<unsigned long long>(kChunk), static_cast<unsigned long long>(kChunk),
              cfg.default_cache ? "defaults (slabfs 64 MiB; libhdf5 1 MiB, 521 slots, w0 0.75)"
                                : "25 chunks (1 MB; libhdf5 521 slots, w0 0.75)",
              cfg.filter.c_str(), peer, static_cast<unsigned long long>(cfg.rounds));
  std::printf(
      "# efficiency = bytes requested / chunk bytes moved to or from the file; times in s "
      "min/median/max; ratio = libhdf5 median / slabfs median\n");
  std::printf("%5s | %9s %9s | %9s %9s | %-20s %-20s %6s | %-20s %-20s %6s\n", "W", "wr slab", "wr h5", "rd slab",
              "rd h5", "write s slabfs", "write s libhdf5", "ratio", "read s slabfs", "read s libhdf5", "ratio");
  for (uint64_t w : cfg.windows) {
    std::vector<double> sw, sr, hw, hr;
    Result2 s{}, h{};
    for (uint64_t round = 0; round < cfg.rounds; ++round) {
      s = RunSlabfs(cfg, w);
      sw.push_back(s.write.seconds);
      sr.push_back(s.read.seconds);
#ifdef SLABFS_BENCH_HDF5
      h = RunHdf5(cfg, w);
      hw.push_back(h.write.seconds);
      hr.push_back(h.read.seconds);
#endif
    }
    const Spread a = SpreadOf(sw), b = SpreadOf(sr);
    if (hw.empty()) {
      std::printf("%5llu | %9.2f %9s | %9.2f %9s | %-20s %-20s %6s | %-20s %-20s %6s\n",
                  static_cast<unsigned long long>(w), s.write.efficiency, "-", s.read.efficiency, "-",
                  Format(a).c_str(), "-", "-", Format(b).c_str(), "-", "-");
      continue;
    }
    const Spread c = SpreadOf(hw), d = SpreadOf(hr);
    std::printf("%5llu | %9.2f %9.2f | %9.2f %9.2f | %-20s %-20s %6.2f | %-20s %-20s %6.2f\n",
                static_cast<unsigned long long>(w), s.write.efficiency, h.write.efficiency, s.read.efficiency,
                h.read.efficiency, Format(a).c_str(), Format(c).c_str(), c.median / a.median, Format(b).c_str(),
                Format(d).c_str(), d.median / b.median);
  }
  const auto corners = WindowCorners(cfg.random_windows);
  std::printf(
      "\n# cached windows: %llu random %llux%llu windows of the same dataset, cache 64 MiB "
      "(libhdf5 10007 slots), 1 thread, second pass; s min/median/max, ratio = libhdf5 / slabfs\n",
      static_cast<unsigned long long>(cfg.random_windows), static_cast<unsigned long long>(kWin),
      static_cast<unsigned long long>(kWin));
  std::printf("%-18s %-20s %-20s %6s\n", "filters", "slabfs", "libhdf5", "ratio");
  for (bool deflate : {false, true}) {
    std::vector<double> ws, wh;
    for (uint64_t round = 0; round < cfg.rounds; ++round) {
      ws.push_back(SlabfsWindows(cfg, corners, deflate));
#ifdef SLABFS_BENCH_HDF5
      wh.push_back(Hdf5Windows(cfg, corners, deflate));
#endif
    }
    const Spread a = SpreadOf(ws);
    const char* name = deflate ? "shuffle,deflate=1" : "none";
    if (wh.empty()) {
      std::printf("%-18s %-20s %-20s %6s\n", name, Format(a).c_str(), "-", "-");
    } else {
      const Spread b = SpreadOf(wh);
      std::printf("%-18s %-20s %-20s %6.2f\n", name, Format(a).c_str(), Format(b).c_str(), b.median / a.median);
    }
  }
  return 0;
}
