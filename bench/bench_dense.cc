// bench_dense: how fast does the API write and read a large dense dataset,
// and what does each filter pipeline cost and save?
//
// For each pipeline in --filters, writes a dataset (default 16384 x 16384 f4
// = 1 GiB in 256 x 256 chunks) of smooth data, sin(i/100) + cos(j/70), in
// row blocks of one row of chunks and commits; then reads it back three
// ways, each from a fresh read-only open (an empty chunk cache): the whole
// dataset in row blocks, one column, and random 64 x 64 windows. Prints one
// table, a row per pipeline: MB/s of element bytes moved (uncompressed),
// the write including its commit (which writes back the chunks still cached
// and syncs), and the bytes stored. The reads check the values they get.
// Figures are from the page cache: the container is not dropped from it.
//
//   bench_dense [--path P] [--n 16384] [--chunk 256] [--chunk-cols C] [--cache-mb 64]
//               [--windows 1000] [--filters 'none;shuffle,deflate=1;shuffle,deflate=6']
//               [--keep]
//
// --filters is a ';'-separated list of pipelines as slab mkdset --filters
// spells them. Each pipeline gets its own container (P, or P.1, P.2, ...
// for several), removed after its row unless --keep.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "bench/bench_util.h"
#include "slabfs/slabfs.h"

using namespace slabfs;
using bench::Clock;
using bench::Seconds;

namespace {

struct Config {
  std::string path = "/tmp/slabfs_bench_dense.slab";
  uint64_t n = 16384, chunk = 256, cache_mb = 64, windows = 1000;
  uint64_t chunk_cols = 0;  // --chunk-cols: 0 = square chunks
  uint64_t cols() const { return chunk_cols ? chunk_cols : chunk; }
  std::vector<std::string> filters;
  bool keep = false;
};

struct Row {
  std::string filters;  // canonical, "none" for none
  double write_mbs = 0, commit_s = 0, rows_mbs = 0, column_mbs = 0, windows_mbs = 0;
  uint64_t stored_bytes = 0;
};

[[noreturn]] void Die(const Status& s, const std::string& what) {
  std::fprintf(stderr, "bench_dense: %s: %s\n", what.c_str(), s.ToString().c_str());
  std::exit(1);
}

[[noreturn]] void Usage() {
  std::fprintf(stderr,
               "usage: bench_dense [--path P] [--n N] [--chunk C] [--chunk-cols C] [--cache-mb M]\n"
               "                   [--windows W] [--filters 'none;shuffle,deflate=1;...'] [--keep]\n");
  std::exit(2);
}

// The data: element (i, j) is row_part[i] + col_part[j], so that filling a
// block costs one add per element and the reads can check any value.
struct Smooth {
  explicit Smooth(uint64_t n) : row_part(n), col_part(n) {
    for (uint64_t i = 0; i < n; ++i) {
      row_part[i] = std::sin(static_cast<double>(i) / 100);
      col_part[i] = std::cos(static_cast<double>(i) / 70);
    }
  }
  float At(uint64_t i, uint64_t j) const { return static_cast<float>(row_part[i] + col_part[j]); }
  void Fill(uint64_t first_row, uint64_t rows, uint64_t n, float* out) const {
    for (uint64_t r = 0; r < rows; ++r) {
      for (uint64_t j = 0; j < n; ++j) *out++ = At(first_row + r, j);
    }
  }
  std::vector<double> row_part, col_part;
};

void Expect(float got, float want, const char* where, uint64_t i, uint64_t j) {
  if (got != want) {
    std::fprintf(stderr, "bench_dense: %s read %g at (%lu, %lu), wrote %g\n", where, got, i, j, want);
    std::exit(1);
  }
}

std::unique_ptr<Container> OpenForReading(const std::string& path, uint64_t cache_mb) {
  auto c = Container::Open(path, {.read_only = true, .cache_bytes = cache_mb << 20});
  if (!c) Die(c.error(), "open " + path);
  return std::move(*c);
}

Dataset OpenData(const Container& c) {
  auto ds = c.OpenDataset("/data");
  if (!ds) Die(ds.error(), "open dataset");
  return *ds;
}

Row RunOne(const Config& cfg, const std::string& filters, const std::string& path, const Smooth& data) {
  const uint64_t n = cfg.n, band = cfg.chunk;  // a row block is one row of chunks
  const double mb = static_cast<double>(n) * n * 4 / 1e6;
  std::vector<float> buf(band * n);
  Row row;
  unlink(path.c_str());
  {
    auto c = Container::Open(path, {.create = true, .cache_bytes = cfg.cache_mb << 20});
    if (!c) Die(c.error(), "create " + path);
    auto ds = (*c)->CreateDataset(
        "/data", {.dtype = DType::kF4, .shape = {n, n}, .chunks = {cfg.chunk, cfg.cols()}, .filters = filters});
    if (!ds) Die(ds.error(), "create dataset with filters '" + filters + "'");
    double write_s = 0;
    for (uint64_t r = 0; r < n; r += band) {
      const uint64_t rows = std::min(band, n - r);
      data.Fill(r, rows, n, buf.data());
      auto t0 = Clock::now();
      Status s = ds->Write(Slab::Box({r, 0}, {rows, n}), buf.data());
      if (!s.ok()) Die(s, "write");
      write_s += Seconds(t0, Clock::now());
    }
    auto t0 = Clock::now();
    Status s = (*c)->Commit();
    if (!s.ok()) Die(s, "commit");
    row.commit_s = Seconds(t0, Clock::now());
    row.write_mbs = mb / (write_s + row.commit_s);
    DatasetInfo info = ds->info();
    row.filters = info.filters.empty() ? "none" : info.filters;
    row.stored_bytes = info.stored_bytes;
    s = (*c)->Close();
    if (!s.ok()) Die(s, "close");
  }

  {  // The whole dataset in row blocks.
    auto c = OpenForReading(path, cfg.cache_mb);
    Dataset ds = OpenData(*c);
    auto t0 = Clock::now();
    for (uint64_t r = 0; r < n; r += band) {
      const uint64_t rows = std::min(band, n - r);
      Status s = ds.Read(Slab::Box({r, 0}, {rows, n}), buf.data());
      if (!s.ok()) Die(s, "read");
      Expect(buf[rows * n - 1], data.At(r + rows - 1, n - 1), "row block", r + rows - 1, n - 1);
    }
    row.rows_mbs = mb / Seconds(t0, Clock::now());
  }
  {  // One column.
    auto c = OpenForReading(path, cfg.cache_mb);
    Dataset ds = OpenData(*c);
    std::vector<float> col(n);
    const uint64_t j = n / 3;
    auto t0 = Clock::now();
    Status s = ds.Read(Slab::Box({0, j}, {n, 1}), col.data());
    if (!s.ok()) Die(s, "read column");
    row.column_mbs = static_cast<double>(n) * 4 / 1e6 / Seconds(t0, Clock::now());
    for (uint64_t i = 0; i < n; i += 97) Expect(col[i], data.At(i, j), "column", i, j);
  }
  {  // Random 64 x 64 windows.
    auto c = OpenForReading(path, cfg.cache_mb);
    Dataset ds = OpenData(*c);
    const uint64_t w = std::min<uint64_t>(64, n);
    std::mt19937_64 rng(42);
    std::vector<float> win(w * w);
    auto t0 = Clock::now();
    for (uint64_t k = 0; k < cfg.windows; ++k) {
      const uint64_t r = rng() % (n - w + 1), q = rng() % (n - w + 1);
      Status s = ds.Read(Slab::Box({r, q}, {w, w}), win.data());
      if (!s.ok()) Die(s, "read window");
      Expect(win[w * w - 1], data.At(r + w - 1, q + w - 1), "window", r + w - 1, q + w - 1);
    }
    row.windows_mbs = static_cast<double>(cfg.windows) * w * w * 4 / 1e6 / Seconds(t0, Clock::now());
  }
  if (!cfg.keep) unlink(path.c_str());
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  std::string filters_text = "none;shuffle,deflate=1;shuffle,deflate=6";
  bench::Args args(argc, argv, "bench_dense", Usage);
  while (args.Next()) {
    if (args.Is("--path"))
      cfg.path = args.Value();
    else if (args.Is("--n"))
      cfg.n = args.Number();
    else if (args.Is("--chunk"))
      cfg.chunk = args.Number();
    else if (args.Is("--chunk-cols"))
      cfg.chunk_cols = args.Number();
    else if (args.Is("--cache-mb"))
      cfg.cache_mb = args.Number();
    else if (args.Is("--windows"))
      cfg.windows = args.Number();
    else if (args.Is("--filters"))
      filters_text = args.Value();
    else if (args.Is("--keep"))
      cfg.keep = true;
    else
      args.Bad();
  }
  cfg.filters = bench::SplitList(filters_text);
  if (cfg.filters.empty()) Usage();

  bench::PrintMachine("bench_dense");
  std::printf("# dataset %lux%lu f4 (%.0f MiB) of sin(i/100)+cos(j/70), chunks %lux%lu, cache %lu MiB, container %s\n",
              cfg.n, cfg.n, static_cast<double>(cfg.n) * cfg.n * 4 / (1 << 20), cfg.chunk, cfg.cols(), cfg.cache_mb,
              cfg.path.c_str());
  std::printf(
      "# MB/s of element bytes (uncompressed); write includes the commit; each read starts from a "
      "fresh open; %lu windows of 64x64\n",
      cfg.windows);
  std::printf("%-28s %10s %9s %10s %11s %12s %10s %7s\n", "filters", "write MB/s", "commit s", "rows MB/s",
              "column MB/s", "windows MB/s", "stored MB", "ratio");
  std::fflush(stdout);
  const Smooth data(cfg.n);
  const double logical = static_cast<double>(cfg.n) * cfg.n * 4;
  for (size_t k = 0; k < cfg.filters.size(); ++k) {
    const std::string path = cfg.filters.size() == 1 ? cfg.path : cfg.path + "." + std::to_string(k + 1);
    Row r = RunOne(cfg, cfg.filters[k], path, data);
    std::printf("%-28s %10.0f %9.3f %10.0f %11.1f %12.1f %10.1f %7.2f\n", r.filters.c_str(), r.write_mbs, r.commit_s,
                r.rows_mbs, r.column_mbs, r.windows_mbs, r.stored_bytes / 1e6,
                r.stored_bytes == 0 ? 0.0 : logical / static_cast<double>(r.stored_bytes));
    std::fflush(stdout);
  }
  return 0;
}
