// bench_dense: how fast does the API write and read a large dense dataset?
//
// Writes a dataset (default 16384 x 16384 f4 = 1 GiB in 256 x 256 chunks)
// in row blocks, commits, reopens, then reads it back three ways: the whole
// dataset in row blocks, one column, and random 64 x 64 windows. Prints a
// table of MB/s (of element bytes moved) with the machine and settings.
// Figures are from the page cache: the container is not dropped from it.
//
//   bench_dense [--path P] [--n 16384] [--chunk 256] [--cache-mb 64]
//               [--windows 1000] [--keep]
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "slabfs/slabfs.h"

using namespace slabfs;
using bench::Clock;
using bench::Seconds;

namespace {


void Die(const Status& s, const char* what) {
  std::fprintf(stderr, "bench_dense: %s: %s\n", what, s.ToString().c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  std::string path = "/tmp/slabfs_bench_dense.slab";
  uint64_t n = 16384, chunk = 256, cache_mb = 64, windows = 1000;
  bool keep = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_dense: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--path") path = next();
    else if (a == "--n") n = std::stoull(next());
    else if (a == "--chunk") chunk = std::stoull(next());
    else if (a == "--cache-mb") cache_mb = std::stoull(next());
    else if (a == "--windows") windows = std::stoull(next());
    else if (a == "--keep") keep = true;
    else {
      std::fprintf(stderr, "usage: bench_dense [--path P] [--n N] [--chunk C] [--cache-mb M] [--windows W] [--keep]\n");
      return 2;
    }
  }
  bench::PrintMachine("bench_dense");
  std::printf("# dataset %lux%lu f4 (%.0f MiB), chunks %lux%lu, cache %lu MiB, container %s\n", n, n,
              n * n * 4.0 / (1 << 20), chunk, chunk, cache_mb, path.c_str());

  unlink(path.c_str());
  const uint64_t band = chunk;  // rows per block: one row of chunks
  std::vector<float> buf(band * n);
  double write_s, commit_s;
  {
    auto c = Container::Open(path, {.create = true, .cache_bytes = cache_mb << 20});
    if (!c) Die(c.error(), "create");
    auto ds = (*c)->CreateDataset("/data", {.dtype = DType::kF4, .shape = {n, n}, .chunks = {chunk, chunk}});
    if (!ds) Die(ds.error(), "create dataset");
    for (uint64_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(i % 1000);
    auto t0 = Clock::now();
    for (uint64_t r = 0; r < n; r += band) {
      uint64_t rows = std::min(band, n - r);
      Status s = ds->Write(Slab::Box({r, 0}, {rows, n}), buf.data());
      if (!s.ok()) Die(s, "write");
    }
    auto t1 = Clock::now();
    Status s = (*c)->Commit();
    if (!s.ok()) Die(s, "commit");
    auto t2 = Clock::now();
    write_s = Seconds(t0, t1);
    commit_s = Seconds(t1, t2);
  }
  const double mb = n * n * 4.0 / 1e6;
  std::printf("%-28s %10s %10s\n", "operation", "MB/s", "seconds");
  std::printf("%-28s %10.0f %10.3f\n", "write row blocks", mb / write_s, write_s);
  std::printf("%-28s %10s %10.3f\n", "commit (fdatasync)", "", commit_s);

  auto c = Container::Open(path, {.read_only = true, .cache_bytes = cache_mb << 20});
  if (!c) Die(c.error(), "open");
  auto ds = (*c)->OpenDataset("/data");
  if (!ds) Die(ds.error(), "open dataset");

  // Whole dataset in row blocks.
  auto t0 = Clock::now();
  double checksum = 0;
  for (uint64_t r = 0; r < n; r += band) {
    uint64_t rows = std::min(band, n - r);
    Status s = ds->Read(Slab::Box({r, 0}, {rows, n}), buf.data());
    if (!s.ok()) Die(s, "read");
    checksum += buf[rows * n - 1];
  }
  auto t1 = Clock::now();
  std::printf("%-28s %10.0f %10.3f\n", "read row blocks", mb / Seconds(t0, t1), Seconds(t0, t1));

  // One column.
  std::vector<float> col(n);
  t0 = Clock::now();
  Status s = ds->Read(Slab::Box({0, n / 3}, {n, 1}), col.data());
  if (!s.ok()) Die(s, "read column");
  t1 = Clock::now();
  std::printf("%-28s %10.1f %10.4f\n", "read one column", n * 4.0 / 1e6 / Seconds(t0, t1), Seconds(t0, t1));

  // Random windows.
  std::mt19937_64 rng(42);
  std::vector<float> win(64 * 64);
  t0 = Clock::now();
  for (uint64_t w = 0; w < windows; ++w) {
    uint64_t r = rng() % (n - 64), q = rng() % (n - 64);
    s = ds->Read(Slab::Box({r, q}, {64, 64}), win.data());
    if (!s.ok()) Die(s, "read window");
    checksum += win[0];
  }
  t1 = Clock::now();
  std::printf("%-28s %10.1f %10.3f\n", ("read " + std::to_string(windows) + " 64x64 windows").c_str(),
              windows * 64 * 64 * 4.0 / 1e6 / Seconds(t0, t1), Seconds(t0, t1));
  CacheStats st = (*c)->cache_stats();
  std::printf("# cache: hits %lu misses %lu bypass reads %lu, %.0f MB read from the container (checksum %g)\n",
              st.hits, st.misses, st.bypass_reads, st.bytes_read / 1e6, checksum);
  if (!keep) unlink(path.c_str());
  return 0;
}
