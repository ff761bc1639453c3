// bench_index: what does each chunk index kind cost per record?
//
// For each kind that applies to a large dataset (fixed array: all dimensions
// fixed; extensible array: one unlimited dimension; B-tree: two unlimited
// dimensions) and N = 10^3 ... 10^7 chunk records, on a real file:
//   insert   Put of every record in chunk order (the order a writer fills a
//            dataset), then one Flush; microseconds per record
//   lookup   Get of every record in random order after reopening the index
//            from its root (cold: index pages are read from the file as
//            needed) and again (warm); microseconds per record
//   bytes    index bytes on disk per record
//   commit   after changing one record: Flush plus fdatasync, milliseconds,
//            and the bytes that Flush wrote
// and, for the largest grid each kind takes, what opening an index costs
// before anything is stored and then with three records in far-apart
// leaves: microseconds and heap bytes the index holds after the open and
// after a first Get.
// The single and compact kinds hold at most 64 records in the dataset
// header and are not listed.
//
//   bench_index [--path P] [--max-n 10000000] [--keep]
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "engine/format/layout.h"
#include "engine/index/chunk_index.h"
#include "engine/io/file.h"
#include "engine/space/allocator.h"
#include "engine/txn/block_store.h"

using namespace slabfs;
using namespace slabfs::engine;
using bench::Clock;
using bench::Seconds;

namespace {

[[noreturn]] void Die(const Status& s, const char* what) {
  std::fprintf(stderr, "bench_index: %s: %s\n", what, s.ToString().c_str());
  std::exit(1);
}

template <typename T>
T Check(Result<T> r, const char* what) {
  if (!r) Die(r.error(), what);
  return std::move(*r);
}

void Check(const Status& s, const char* what) {
  if (!s.ok()) Die(s, what);
}

// Counts the bytes written through it (the index writes only whole blocks
// with WriteAt).
class CountingFile final : public File {
 public:
  explicit CountingFile(std::unique_ptr<File> f) : f_(std::move(f)) {}
  Status ReadAt(uint64_t off, void* buf, size_t n) override { return f_->ReadAt(off, buf, n); }
  Status WriteAt(uint64_t off, const void* buf, size_t n) override {
    written += n;
    return f_->WriteAt(off, buf, n);
  }
  Status Sync() override { return f_->Sync(); }
  Result<uint64_t> Size() override { return f_->Size(); }
  Status Truncate(uint64_t size) override { return f_->Truncate(size); }
  const std::string& name() const override { return f_->name(); }
  uint64_t written = 0;

 private:
  std::unique_ptr<File> f_;
};

struct Row {
  double insert_us, cold_us, warm_us, bytes_per_record, commit_ms;
  uint64_t commit_bytes;
};

// The coordinates of record i: the grid is filled in C order. For the
// B-tree, a square-ish 2-D grid of `side` columns with both dimensions
// unlimited.
void CoordOf(IndexKind kind, uint64_t i, uint64_t side, uint64_t* c) {
  if (kind == IndexKind::kBTree) {
    c[0] = i / side;
    c[1] = i % side;
  } else {
    c[0] = i;
  }
}

Row Measure(IndexKind kind, uint64_t n, const std::string& path) {
  ::unlink(path.c_str());
  auto file = std::make_unique<CountingFile>(Check(OpenPosixFile(path, {.writable = true, .create = true}), "open"));
  Allocator alloc;
  alloc.Reset(kDataStart, {});
  // The records point into a region of "chunks" 64 bytes apart; the index
  // blocks are allocated after it (the file is sparse there).
  const uint64_t data = alloc.Allocate(n * 64, 4096);
  alloc.MarkDurable();
  BlockStore store(file.get(), &alloc);
  IndexGeometry geo;
  geo.max_chunk_bytes = kMaxChunkBytes;
  geo.max_grid = kind == IndexKind::kFixedArray        ? Dims{n}
                 : kind == IndexKind::kExtensibleArray ? Dims{kUnlimited}
                                                       : Dims{kUnlimited, kUnlimited};
  const size_t rank = geo.max_grid.size();
  uint64_t side = 1;
  while (side * side < n) ++side;
  auto idx = Check(OpenChunkIndex(kind, geo, "", &store, "bench"), "create index");
  uint64_t c[2];

  Row row{};
  auto t0 = Clock::now();
  for (uint64_t i = 0; i < n; ++i) {
    CoordOf(kind, i, side, c);
    Check(idx->Put(ChunkCoord(c, rank), ChunkRecord{data + 64 * i}), "put");
  }
  Check(idx->Flush(), "flush");
  auto t1 = Clock::now();
  Check(file->Sync(), "sync");
  alloc.MarkDurable();
  row.insert_us = Seconds(t0, t1) * 1e6 / static_cast<double>(n);
  row.bytes_per_record = static_cast<double>(idx->disk_bytes()) / static_cast<double>(n);

  // Lookups in random order, from a fresh instance opened on the root.
  std::vector<uint64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(42));
  std::string root = idx->EncodeRoot();
  idx.reset();
  auto again = Check(OpenChunkIndex(kind, geo, root, &store, "bench"), "reopen index");
  uint64_t checksum = 0;
  for (int pass = 0; pass < 2; ++pass) {
    auto a = Clock::now();
    for (uint64_t i : order) {
      CoordOf(kind, i, side, c);
      ChunkRecord r = Check(again->Get(ChunkCoord(c, rank)), "get");
      if (r.addr != data + 64 * i) Die(Status::Corruption("wrong record"), "get");
      checksum += r.addr;
    }
    auto b = Clock::now();
    (pass == 0 ? row.cold_us : row.warm_us) = Seconds(a, b) * 1e6 / static_cast<double>(n);
  }
  if (checksum == 0) std::puts("");  // keeps the loop from being optimised away

  // One changed record, then a commit of the index.
  const uint64_t before_written = file->written;
  CoordOf(kind, n / 2, side, c);
  Check(again->Put(ChunkCoord(c, rank), ChunkRecord{data + 8}), "put one");
  auto a = Clock::now();
  Check(again->Flush(), "flush one");
  Check(file->Sync(), "sync one");
  auto b = Clock::now();
  row.commit_ms = Seconds(a, b) * 1e3;
  row.commit_bytes = file->written - before_written;
  ::unlink(path.c_str());
  return row;
}

// Heap bytes in use (glibc's counts of allocated bytes, in the arenas and
// in blocks of their own mapping).
uint64_t HeapInUse() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

struct OpenRow {
  double open_us, get_us;
  int64_t open_heap, get_heap;
};

// Opens an index of `kind` over `geo` from `root` and makes one Get (of
// `at`): time and heap held after each.
OpenRow MeasureOpen(IndexKind kind, const IndexGeometry& geo, const std::string& root, BlockStore* store,
                    const Dims& at) {
  OpenRow row{};
  const uint64_t heap0 = HeapInUse();
  auto a = Clock::now();
  auto idx = Check(OpenChunkIndex(kind, geo, root, store, "bench"), "open");
  auto b = Clock::now();
  row.open_heap = static_cast<int64_t>(HeapInUse() - heap0);
  (void)Check(idx->Get(ChunkCoord(at)), "get");
  auto c = Clock::now();
  row.get_heap = static_cast<int64_t>(HeapInUse() - heap0);
  row.open_us = Seconds(a, b) * 1e6;
  row.get_us = Seconds(b, c) * 1e6;
  return row;
}

// The open table: for each kind its largest grid, empty and with three
// records (first, middle and last leaf of the grid, or far along an
// unlimited dimension).
void MeasureOpens(const std::string& path) {
  ::unlink(path.c_str());
  auto file = Check(OpenPosixFile(path, {.writable = true, .create = true}), "open");
  Allocator alloc;
  alloc.Reset(kDataStart, {});
  const uint64_t data = alloc.Allocate(1 << 20, 4096);
  alloc.MarkDurable();
  BlockStore store(file.get(), &alloc);
  struct Case {
    const char* name;
    IndexKind kind;
    Dims grid;
    std::vector<Dims> coords;
  };
  const uint64_t n = kMaxFixedArrayChunks;
  const Case cases[] = {
      {"fixed 2^28", IndexKind::kFixedArray, {n}, {{0}, {n / 2}, {n - 1}}},
      {"extensible", IndexKind::kExtensibleArray, {kUnlimited}, {{0}, {n / 2}, {n - 1}}},
      {"btree", IndexKind::kBTree, {kUnlimited, kUnlimited}, {{0, 0}, {n / 2, 1}, {n - 1, 2}}},
  };
  std::printf("\n# open: the index of the largest grid, empty and with 3 records in far-apart leaves\n");
  std::printf("%-11s %8s %10s %12s %10s %12s\n", "kind", "records", "open us", "open heap B", "get us", "get heap B");
  for (const Case& c : cases) {
    IndexGeometry geo;
    geo.max_chunk_bytes = kMaxChunkBytes;
    geo.max_grid = c.grid;
    for (int stored = 0; stored < 2; ++stored) {
      std::string root;
      if (stored) {
        auto idx = Check(OpenChunkIndex(c.kind, geo, "", &store, "bench"), "create index");
        for (const Dims& at : c.coords) Check(idx->Put(ChunkCoord(at), ChunkRecord{data + 64}), "put");
        Check(idx->Flush(), "flush");
        root = idx->EncodeRoot();
      }
      OpenRow r = MeasureOpen(c.kind, geo, root, &store, c.coords[1]);
      std::printf("%-11s %8d %10.1f %12lld %10.1f %12lld\n", c.name, stored ? 3 : 0, r.open_us,
                  static_cast<long long>(r.open_heap), r.get_us, static_cast<long long>(r.get_heap));
    }
  }
  ::unlink(path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::string path = "/tmp/slabfs-bench-index.bin";
  uint64_t max_n = 10000000;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--path" && i + 1 < argc)
      path = argv[++i];
    else if (a == "--max-n" && i + 1 < argc)
      max_n = std::stoull(argv[++i]);
    else {
      std::fprintf(stderr, "usage: bench_index [--path P] [--max-n N]\n");
      return 2;
    }
  }
  bench::PrintMachine("bench_index");
  std::printf("# records are 8-byte chunk addresses (unfiltered datasets); file %s\n", path.c_str());
  std::printf("# HDF5 (2008 hardware): extensible array 0.285 us/lookup, 0.34 us/insert, 8.0 B/record;\n");
  std::printf("#                       v2 B-tree 0.66-0.82 us/lookup, 0.71-0.94 us/insert, 16.8 B/record\n");
  std::printf("%-11s %9s %11s %11s %11s %9s %11s %12s\n", "kind", "N", "insert us", "lookup us", "warm us", "B/record",
              "commit ms", "commit bytes");
  for (IndexKind kind : {IndexKind::kFixedArray, IndexKind::kExtensibleArray, IndexKind::kBTree}) {
    for (uint64_t n = 1000; n <= max_n; n *= 10) {
      Row r = Measure(kind, n, path);
      std::printf("%-11s %9llu %11.3f %11.3f %11.3f %9.2f %11.3f %12llu\n", std::string(IndexKindName(kind)).c_str(),
                  static_cast<unsigned long long>(n), r.insert_us, r.cold_us, r.warm_us, r.bytes_per_record,
                  r.commit_ms, static_cast<unsigned long long>(r.commit_bytes));
      std::fflush(stdout);
    }
  }
  MeasureOpens(path);
  return 0;
}
