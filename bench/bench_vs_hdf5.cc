// bench_vs_hdf5: slabfs's API next to libhdf5 on the same data, in the
// same run, rounds interleaved (slabfs, libhdf5, slabfs, ...).
//
// For each pipeline (none, shuffle+deflate-1, shuffle+deflate-6) an N x N
// f4 dataset (default 8192: 256 MiB; --n 16384 for 1 GiB) of smooth data in
// C x C chunks (default 256) is written by each library in row blocks of
// one row of chunks, then read back from fresh opens:
//
//   write      every row block, then commit (slabfs) / close (libhdf5), then
//              fsync of the file for both: the bytes are on disk
//   rows       the whole dataset in row blocks
//   column     one column
//   32 cols    32 adjacent columns, one column per call (the pattern that
//              makes a too-small chunk cache thrash), with each library's
//              default cache (slabfs 64 MiB; libhdf5 1 MiB, 521 slots), and
//              with a 17 MiB cache (a column of chunks fits) for both
//   windows    1000 random 64 x 64 windows, cold
//   cached     20000 random 64 x 64 windows within a 1024 x 1024 corner
//              after one warm-up pass, cache 64 MiB for both (libhdf5 10007
//              slots); 1 thread, and for slabfs 2 threads on one dataset
//              (libhdf5 serialises threads: its 1-thread time is the peer),
//              each timed on its second pass
//
// Each cell is seconds min/median/max over the rounds; ratio = libhdf5
// median / slabfs median (above 1: slabfs is faster). Every read is
// checked. The page cache holds the files (nothing is dropped).
//
//   bench_vs_hdf5 [--n 8192] [--chunk 256] [--rounds 3] [--path /tmp/x]
//                 [--filters 'none;shuffle,deflate=1;shuffle,deflate=6']
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <hdf5.h>

#include "bench/bench_util.h"
#include "slabfs/slabfs.h"

using namespace slabfs;
using bench::Clock;
using bench::Format;
using bench::Seconds;
using bench::Spread;
using bench::SpreadOf;

namespace {

struct Config {
  uint64_t n = 8192, chunk = 256, rounds = 3;
  std::string path = "/tmp/slabfs_bench_vs_hdf5";
  std::vector<std::string> filters;
};

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "bench_vs_hdf5: %s\n", what.c_str());
  std::exit(1);
}

[[noreturn]] void Usage() {
  std::fprintf(stderr,
               "usage: bench_vs_hdf5 [--n 8192] [--chunk 256] [--rounds 3] [--path P]\n"
               "                     [--filters 'none;shuffle,deflate=1;shuffle,deflate=6']\n");
  std::exit(2);
}

float Value(uint64_t i, uint64_t j) {
  return static_cast<float>(std::sin(static_cast<double>(i) / 100) + std::cos(static_cast<double>(j) / 70));
}

void Check(float got, uint64_t i, uint64_t j, const char* where) {
  if (got != Value(i, j)) Die(std::string(where) + ": wrong value at " + std::to_string(i) + "," + std::to_string(j));
}

void FsyncPath(const std::string& path) {
  if (!bench::FsyncPath(path)) Die("fsync " + path);
}

int DeflateLevel(const std::string& filters) {
  const size_t at = filters.find("deflate=");
  return at == std::string::npos ? 0 : std::atoi(filters.c_str() + at + 8);
}

// One library's side: write the dataset, open it for reading with a cache
// of `cache` bytes (0: the library's default), read a box.
class Side {
 public:
  virtual ~Side() = default;
  virtual void Write(const Config& cfg, const std::string& filters) = 0;
  virtual void Open(uint64_t cache) = 0;
  virtual void Read(uint64_t r, uint64_t c, uint64_t rows, uint64_t cols, float* buf) = 0;
  virtual void Close() = 0;
};

class SlabfsSide final : public Side {
 public:
  explicit SlabfsSide(std::string path) : path_(std::move(path)) {}
  void Write(const Config& cfg, const std::string& filters) override {
    unlink(path_.c_str());
    auto c = Container::Open(path_, {.create = true});
    if (!c) Die("create: " + c.error().ToString());
    auto ds = (*c)->CreateDataset("/data", {.dtype = DType::kF4,
                                            .shape = {cfg.n, cfg.n},
                                            .chunks = {cfg.chunk, cfg.chunk},
                                            .filters = filters == "none" ? "" : filters});
    if (!ds) Die("create dataset: " + ds.error().ToString());
    std::vector<float> buf(cfg.chunk * cfg.n);
    for (uint64_t r = 0; r < cfg.n; r += cfg.chunk) {
      const uint64_t rows = std::min(cfg.chunk, cfg.n - r);
      for (uint64_t i = 0; i < rows; ++i)
        for (uint64_t j = 0; j < cfg.n; ++j) buf[i * cfg.n + j] = Value(r + i, j);
      if (Status s = ds->Write(Slab::Box({r, 0}, {rows, cfg.n}), buf.data()); !s.ok()) Die("write: " + s.ToString());
    }
    if (Status s = (*c)->Close(); !s.ok()) Die("close: " + s.ToString());
    FsyncPath(path_);
  }
  void Open(uint64_t cache) override {
    OpenOptions o{.read_only = true};
    if (cache != 0) o.cache_bytes = cache;
    auto c = Container::Open(path_, o);
    if (!c) Die("open: " + c.error().ToString());
    c_ = std::move(*c);
    auto ds = c_->OpenDataset("/data");
    if (!ds) Die("open dataset: " + ds.error().ToString());
    ds_ = std::make_unique<Dataset>(*ds);
  }
  void Read(uint64_t r, uint64_t c, uint64_t rows, uint64_t cols, float* buf) override {
    if (Status s = ds_->Read(Slab::Box({r, c}, {rows, cols}), buf); !s.ok()) Die("read: " + s.ToString());
  }
  void Close() override {
    ds_.reset();
    c_.reset();
  }
  ~SlabfsSide() override { unlink(path_.c_str()); }

 private:
  std::string path_;
  std::unique_ptr<Container> c_;
  std::unique_ptr<Dataset> ds_;
};

class Hdf5Side final : public Side {
 public:
  explicit Hdf5Side(std::string path) : path_(std::move(path)) {}
  void Write(const Config& cfg, const std::string& filters) override {
    unlink(path_.c_str());
    hid_t f = H5Fcreate(path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t dims[2] = {cfg.n, cfg.n}, chunk[2] = {cfg.chunk, cfg.chunk};
    hid_t space = H5Screate_simple(2, dims, nullptr);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    if (filters.find("shuffle") != std::string::npos) H5Pset_shuffle(dcpl);
    if (int level = DeflateLevel(filters); level > 0) H5Pset_deflate(dcpl, static_cast<unsigned>(level));
    hid_t ds = H5Dcreate2(f, "data", H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (ds < 0) Die("H5Dcreate2");
    std::vector<float> buf(cfg.chunk * cfg.n);
    for (uint64_t r = 0; r < cfg.n; r += cfg.chunk) {
      const uint64_t rows = std::min(cfg.chunk, cfg.n - r);
      for (uint64_t i = 0; i < rows; ++i)
        for (uint64_t j = 0; j < cfg.n; ++j) buf[i * cfg.n + j] = Value(r + i, j);
      hid_t fs = H5Dget_space(ds);
      const hsize_t start[2] = {r, 0}, count[2] = {rows, cfg.n};
      H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, nullptr, count, nullptr);
      hid_t ms = H5Screate_simple(2, count, nullptr);
      if (H5Dwrite(ds, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, buf.data()) < 0) Die("H5Dwrite");
      H5Sclose(ms);
      H5Sclose(fs);
    }
    H5Dclose(ds);
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Fclose(f);
    FsyncPath(path_);
  }
  void Open(uint64_t cache) override {
    dapl_ = H5Pcreate(H5P_DATASET_ACCESS);
    if (cache != 0) H5Pset_chunk_cache(dapl_, 10007, cache, 0.75);
    f_ = H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    ds_ = H5Dopen2(f_, "data", dapl_);
    if (ds_ < 0) Die("H5Dopen2");
    fs_ = H5Dget_space(ds_);
  }
  void Read(uint64_t r, uint64_t c, uint64_t rows, uint64_t cols, float* buf) override {
    const hsize_t start[2] = {r, c}, count[2] = {rows, cols};
    H5Sselect_hyperslab(fs_, H5S_SELECT_SET, start, nullptr, count, nullptr);
    hid_t ms = H5Screate_simple(2, count, nullptr);
    if (H5Dread(ds_, H5T_NATIVE_FLOAT, ms, fs_, H5P_DEFAULT, buf) < 0) Die("H5Dread");
    H5Sclose(ms);
  }
  void Close() override {
    H5Sclose(fs_);
    H5Dclose(ds_);
    H5Fclose(f_);
    H5Pclose(dapl_);
  }
  ~Hdf5Side() override { unlink(path_.c_str()); }

 private:
  std::string path_;
  hid_t dapl_ = -1, f_ = -1, ds_ = -1, fs_ = -1;
};

constexpr uint64_t kWin = 64;
constexpr uint64_t kCachedRegion = 1024;
constexpr uint64_t kCached = 20000;

std::vector<std::pair<uint64_t, uint64_t>> Corners(uint64_t count, uint64_t limit, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::pair<uint64_t, uint64_t>> out(count);
  for (auto& [r, c] : out) {
    r = rng() % (limit - kWin + 1);
    c = rng() % (limit - kWin + 1);
  }
  return out;
}

// The workloads, in row order; each returns seconds.
const char* const kRows[] = {"write",           "rows",    "column",           "32 cols, default cache",
                             "32 cols, 17 MiB", "windows", "cached, 1 thread", "cached, 2 threads"};
constexpr size_t kNumRows = sizeof(kRows) / sizeof(kRows[0]);

std::vector<double> RunSide(Side& side, const Config& cfg, const std::string& filters, bool is_slabfs) {
  const uint64_t n = cfg.n;
  std::vector<double> t(kNumRows, -1);
  auto t0 = Clock::now();
  side.Write(cfg, filters);
  t[0] = Seconds(t0, Clock::now());
  std::vector<float> buf(cfg.chunk * n);
  side.Open(0);
  t0 = Clock::now();
  for (uint64_t r = 0; r < n; r += cfg.chunk) {
    const uint64_t rows = std::min(cfg.chunk, n - r);
    side.Read(r, 0, rows, n, buf.data());
    Check(buf[rows * n - 1], r + rows - 1, n - 1, "rows");
  }
  t[1] = Seconds(t0, Clock::now());
  side.Close();
  side.Open(0);
  t0 = Clock::now();
  side.Read(0, n / 3, n, 1, buf.data());
  t[2] = Seconds(t0, Clock::now());
  Check(buf[n - 1], n - 1, n / 3, "column");
  side.Close();
  for (int k = 0; k < 2; ++k) {
    side.Open(k == 0 ? 0 : 17ull << 20);
    t0 = Clock::now();
    for (uint64_t j = n / 2; j < n / 2 + 32; ++j) {
      side.Read(0, j, n, 1, buf.data());
      Check(buf[n / 2], n / 2, j, "32 columns");
    }
    t[3 + k] = Seconds(t0, Clock::now());
    side.Close();
  }
  side.Open(0);
  const auto cold = Corners(1000, n, 42);
  t0 = Clock::now();
  for (auto [r, c] : cold) {
    side.Read(r, c, kWin, kWin, buf.data());
    Check(buf[kWin * kWin - 1], r + kWin - 1, c + kWin - 1, "windows");
  }
  t[5] = Seconds(t0, Clock::now());
  side.Close();
  side.Open(64ull << 20);
  const auto warm = Corners(kCached, std::min(n, kCachedRegion), 7);
  for (int pass = 0; pass < 2; ++pass) {
    t0 = Clock::now();
    for (auto [r, c] : warm) side.Read(r, c, kWin, kWin, buf.data());
    t[6] = Seconds(t0, Clock::now());
    Check(buf[kWin * kWin - 1], warm.back().first + kWin - 1, warm.back().second + kWin - 1, "cached");
  }
  if (is_slabfs) {
    // Two threads, each half of the windows, on the one dataset; two passes,
    // the second timed, as on one thread.
    for (int pass = 0; pass < 2; ++pass) {
      t0 = Clock::now();
      std::vector<std::thread> threads;
      for (size_t w = 0; w < 2; ++w) {
        threads.emplace_back([&, w] {
          std::vector<float> b(kWin * kWin);
          for (size_t k = w; k < warm.size(); k += 2) side.Read(warm[k].first, warm[k].second, kWin, kWin, b.data());
        });
      }
      for (auto& th : threads) th.join();
      t[7] = Seconds(t0, Clock::now());
    }
  }
  side.Close();
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  std::string filters_text = "none;shuffle,deflate=1;shuffle,deflate=6";
  bench::Args args(argc, argv, "bench_vs_hdf5", Usage);
  while (args.Next()) {
    if (args.Is("--n"))
      cfg.n = args.Number();
    else if (args.Is("--chunk"))
      cfg.chunk = args.Number();
    else if (args.Is("--rounds"))
      cfg.rounds = args.Number();
    else if (args.Is("--path"))
      cfg.path = args.Value();
    else if (args.Is("--filters"))
      filters_text = args.Value();
    else
      args.Bad();
  }
  cfg.filters = bench::SplitList(filters_text);
  if (cfg.filters.empty() || cfg.n < kCachedRegion) Usage();
  unsigned maj = 0, min = 0, rel = 0;
  H5get_libversion(&maj, &min, &rel);
  bench::PrintMachine("bench_vs_hdf5");
  std::printf(
      "# %llux%llu f4 (%.0f MiB), %llux%llu chunks, libhdf5 %u.%u.%u, %llu rounds interleaved; seconds "
      "min/median/max; ratio = libhdf5 median / slabfs median\n",
      static_cast<unsigned long long>(cfg.n), static_cast<unsigned long long>(cfg.n),
      static_cast<double>(cfg.n) * cfg.n * 4 / (1 << 20), static_cast<unsigned long long>(cfg.chunk),
      static_cast<unsigned long long>(cfg.chunk), maj, min, rel, static_cast<unsigned long long>(cfg.rounds));
  for (const std::string& filters : cfg.filters) {
    std::vector<std::vector<double>> s(kNumRows), h(kNumRows);
    for (uint64_t round = 0; round < cfg.rounds; ++round) {
      SlabfsSide a(cfg.path + ".slab");
      Hdf5Side b(cfg.path + ".h5");
      auto ts = RunSide(a, cfg, filters, true);
      auto th = RunSide(b, cfg, filters, false);
      for (size_t k = 0; k < kNumRows; ++k) {
        s[k].push_back(ts[k]);
        h[k].push_back(th[k]);
      }
    }
    std::printf("\n## filters %s\n%-24s %-22s %-22s %6s\n", filters.c_str(), "workload", "slabfs", "libhdf5", "ratio");
    for (size_t k = 0; k < kNumRows; ++k) {
      const Spread a = SpreadOf(s[k]);
      // The 2-thread row compares against libhdf5 on 1 thread.
      const Spread b = SpreadOf(k == 7 ? h[6] : h[k]);
      std::printf("%-24s %-22s %-22s %6.2f\n", kRows[k], Format(a).c_str(), (Format(b) + (k == 7 ? "*" : "")).c_str(),
                  b.median / a.median);
    }
    std::fflush(stdout);
  }
  std::printf("\n* libhdf5 on 1 thread (it serialises threads)\n");
  return 0;
}
