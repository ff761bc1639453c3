// Whole reads of one HDF5 dataset through the HDF5 store (stores/hdf5:
// chunk map from libhdf5 once, raw chunks by pread, decoded by slabfs's
// codecs on the thread pool) -- one open and one read per run, as
// bench/bench_h5store.py drives it, interleaved with h5py's read of the
// same dataset.
//
//   bench_h5store FILE DATASET [ROUNDS]
//
// Prints one line per round: "open_s read_s bytes" (the read timed with
// its destination already touched), then the cache's counters of the
// last round.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "stores/hdf5/hdf5_store.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_h5store FILE DATASET [ROUNDS]\n");
    return 2;
  }
  const int rounds = argc > 3 ? std::stoi(argv[3]) : 1;
  using Clock = std::chrono::steady_clock;
  // The destination is touched before the clock starts, as a warm
  // interpreter's reused heap is for h5py: the kernel's page faults on
  // fresh memory are not the store's cost.
  std::vector<char> buf;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
    auto store = slabfs::stores::OpenHdf5Store(argv[1]);
    if (!store) {
      std::fprintf(stderr, "%s\n", store.error().ToString().c_str());
      return 1;
    }
    auto ds = (*store)->OpenDataset(std::string_view(argv[2]));
    if (!ds) {
      std::fprintf(stderr, "%s\n", ds.error().ToString().c_str());
      return 1;
    }
    const auto t1 = Clock::now();
    const slabfs::DatasetInfo& info = (*ds)->info().dataset;
    if (buf.size() != info.size_bytes) {
      buf.assign(info.size_bytes, '\1');
    }
    const auto t1b = Clock::now();
    slabfs::Status s = (*ds)->Read(slabfs::Slab::All(info.shape), buf.data());
    const auto t2 = Clock::now();
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    std::printf("%.6f %.6f %llu\n", std::chrono::duration<double>(t1 - t0).count(),
                std::chrono::duration<double>(t2 - t1b).count(), static_cast<unsigned long long>(info.size_bytes));
    if (r + 1 == rounds) {
      const slabfs::CacheStats c = (*store)->cache_stats();
      std::printf("# cache: bytes_read %llu bypass_reads %llu resident %llu\n",
                  static_cast<unsigned long long>(c.bytes_read), static_cast<unsigned long long>(c.bypass_reads),
                  static_cast<unsigned long long>(c.resident_bytes));
    }
  }
  return 0;
}
