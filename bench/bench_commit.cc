// bench_commit: does one small change cost the same in a big container as
// in a small one?
//
// A container grows to N = 1,000 ... --max-n entries (new files: 1-D u1
// datasets of 100-4,000 bytes, as the mount makes them), in one group
// ("flat") or in groups of 100 ("tree"), committed in batches of 1,000.
// At each N it times --ops single operations, each followed by a commit,
// the way the mount's close does it:
//   create   create a dataset at the N+1st name, write its bytes, commit
//   rename   rename one dataset within its group, commit
//   lookup   resolve the path of a random entry (no commit)
//   list     list the group of a random entry (no commit; milliseconds;
//            up to 20, after the others)
// and reports per-operation milliseconds (min/median/max; lookups in
// microseconds), the bytes the commits wrote per operation (wchar of
// /proc/self/io) and the median CPU time of the process per create and
// rename (user + system: the work, without the wait for the disk, whose
// fdatasyncs share the peer's journal). The peer in the
// same run is a plain directory on the same disk: open(O_CREAT), write,
// fdatasync, close, fsync of the directory (a create as durable as a
// commit), and rename + fsync of the directory.
//
//   bench_commit [--dir D] [--max-n 100000] [--ops 200] [--layout flat|tree|both|tiny]
// (tiny: only the 1 x 1 chunks row, TinyChunksThenSmallCommits)
// (the last size is --max-n less the operations and 1,000: a group holds at
// most 100,000 entries)
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "slabfs/container.h"
#include "slabfs/fsck.h"

using namespace slabfs;
using bench::Clock;

namespace {

uint64_t WrittenBytes() {
  std::ifstream f("/proc/self/io");
  std::string key;
  uint64_t v = 0;
  while (f >> key >> v)
    if (key == "wchar:") return v;
  return 0;
}

// The process's CPU time (user and system, every thread) in milliseconds:
// what an operation costs the machine, without the wait for the disk that
// makes wall times of fdatasync noisy (and shared with the peer's journal).
double CpuMs() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

double MedianOf(std::vector<double> s) {
  std::sort(s.begin(), s.end());
  return s.empty() ? 0 : s[s.size() / 2];
}

struct Stats {
  std::vector<double> ms;
  std::vector<double> cpu_ms;  // when measured
  uint64_t bytes = 0;
  // min median max of `ms` times `scale`, KiB per op, median CPU ms.
  std::string Row(double scale = 1) const {
    std::vector<double> s = ms;
    std::sort(s.begin(), s.end());
    char buf[160];
    if (s.empty()) return "-";
    int n = std::snprintf(buf, sizeof buf, "%8.3f %8.3f %8.3f %9.1f", s.front() * scale, s[s.size() / 2] * scale,
                          s.back() * scale, static_cast<double>(bytes) / 1024.0 / static_cast<double>(s.size()));
    if (!cpu_ms.empty()) std::snprintf(buf + n, sizeof buf - n, " %8.3f", MedianOf(cpu_ms));
    return buf;
  }
  double median() const { return MedianOf(ms); }
  double cpu_median() const { return MedianOf(cpu_ms); }
};

std::string NameOf(uint64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "file-%07llu.txt", static_cast<unsigned long long>(i));
  return buf;
}

std::string GroupOf(bool tree, uint64_t i) {
  if (!tree) return "/flat";
  char buf[32];
  std::snprintf(buf, sizeof buf, "/tree/d%05llu", static_cast<unsigned long long>(i / 100));
  return buf;
}

DatasetOptions NewFile() { return {.dtype = DType::kU1, .shape = {0}, .max_shape = {kUnlimited}}; }

template <typename T>
Status StatusOf(const Result<T>& r) {
  return r ? Status::OK() : r.error();
}

bool Check(const Status& s, const char* what) {
  if (s.ok()) return true;
  std::fprintf(stderr, "bench_commit: %s: %s\n", what, s.ToString().c_str());
  std::exit(1);
}

// Creates entry i with its bytes.
void CreateEntry(Container& c, bool tree, uint64_t i, const std::string& payload) {
  const std::string group = GroupOf(tree, i);
  if (tree && i % 100 == 0) Check(StatusOf(c.MakeGroups(group)), "mkdir");
  auto ds = c.CreateDataset(group + "/" + NameOf(i), NewFile());
  Check(StatusOf(ds), "create");
  const size_t len = 100 + (i * 7919) % 3900;
  Check(ds->WriteBytes(0, len, payload.data(), Dataset::Growth::kGrowRows), "write");
}

void PlainCreate(const std::string& dir, uint64_t i, const std::string& payload) {
  const std::string p = dir + "/" + NameOf(i);
  const int fd = open(p.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  const size_t len = 100 + (i * 7919) % 3900;
  if (fd < 0 || write(fd, payload.data(), len) != static_cast<ssize_t>(len) || fdatasync(fd) != 0) {
    std::perror("plain create");
    std::exit(1);
  }
  close(fd);
  bench::FsyncPath(dir);
}

// The issue's row "every commit after one dataset with 1x1 chunks got
// 1 MiB": a 1024 x 1024 u1 dataset in 1 x 1 chunks written whole (a
// million chunk extents) and committed, then `ops` commits of one small new
// file each, timed as the creates above; before the free list was written
// as deltas each took 0.6-1 s (the whole list rewritten).
void TinyChunksThenSmallCommits(const std::string& dir, int ops, const std::string& payload) {
  const std::string path = dir + "/bench_commit_tiny.slab";
  std::filesystem::remove(path);
  auto c = Container::Open(path, {.create = true});
  Check(StatusOf(c), "open");
  auto ds = (*c)->CreateDataset("/tiny", {.dtype = DType::kU1, .shape = {1024, 1024}, .chunks = {1, 1}});
  Check(StatusOf(ds), "create");
  std::string bytes(1 << 20, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(1 + i % 251);
  auto t0 = Clock::now();
  Check(ds->WriteBytes(0, bytes.size(), bytes.data()), "write");
  Check((*c)->Commit(), "commit");
  const double first_s = bench::Seconds(t0, Clock::now());
  Check(StatusOf((*c)->MakeGroups("/flat")), "mkdir");
  Stats after;
  for (int k = 0; k < ops; ++k) {
    const uint64_t w0 = WrittenBytes();
    const double c0 = CpuMs();
    t0 = Clock::now();
    CreateEntry(**c, false, static_cast<uint64_t>(k), payload);
    Check((*c)->Commit(), "commit");
    const auto t1 = Clock::now();
    after.cpu_ms.push_back(CpuMs() - c0);
    after.bytes += WrittenBytes() - w0;
    after.ms.push_back(bench::Seconds(t0, t1) * 1e3);
  }
  std::printf("1x1 chunks: a 1 MiB dataset in 1,048,576 chunks written and committed in %.2f s\n", first_s);
  std::printf("%-6s %8s %-7s %s\n", "1x1", "-", "create", after.Row().c_str());
  if (auto r = CheckContainer(path, {.verify_data = false})) {
    std::printf("1x1 container: %.1f MiB, %llu free extents, free list in %llu blocks%s\n",
                static_cast<double>(r->stats.file_bytes) / 1048576.0,
                static_cast<unsigned long long>(r->stats.free_extents),
                static_cast<unsigned long long>(r->stats.free_list_blocks), r->clean() ? "" : " (NOT CLEAN)");
  }
  Check((*c)->Close(), "close");
  std::filesystem::remove(path);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "/tmp";
  uint64_t max_n = 100000;
  int ops = 200;
  std::string layout = "both";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--dir")
      dir = argv[i + 1];
    else if (a == "--max-n")
      max_n = std::stoull(argv[i + 1]);
    else if (a == "--ops")
      ops = std::stoi(argv[i + 1]);
    else if (a == "--layout")
      layout = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: bench_commit [--dir D] [--max-n N] [--ops K] [--layout flat|tree|both|tiny]\n");
      return 2;
    }
  }
  bench::PrintMachine("bench_commit");
  std::printf("# per operation: min median max ms, KiB written; commits after every create and rename\n");
  const std::string payload(4096, 'x');
  std::mt19937_64 rng(42);
  std::vector<std::string> layouts;
  if (layout == "both" || layout == "flat") layouts.push_back("flat");
  if (layout == "both" || layout == "tree") layouts.push_back("tree");
  if (layout == "tiny") {
    TinyChunksThenSmallCommits(dir, ops, payload);
    return 0;
  }
  for (const std::string& lay : layouts) {
    const bool tree = lay == "tree";
    const std::string path = dir + "/bench_commit.slab";
    const std::string plain = dir + "/bench_commit.plain";
    std::filesystem::remove(path);
    std::filesystem::remove_all(plain);
    std::filesystem::create_directories(plain);
    auto c = Container::Open(path, {.create = true});
    Check(StatusOf(c), "open");
    Check(StatusOf((*c)->MakeGroups(tree ? "/tree" : "/flat")), "mkdir");
    std::printf("%-5s %8s %-7s %8s %8s %8s %9s %8s\n", "layout", "N", "op", "min", "median", "max", "KiB/op", "CPU ms");
    uint64_t n = 0;
    double first_create = 0, first_plain = 0, first_create_cpu = 0, first_rename_cpu = 0, first_lookup = 0;
    // A group holds at most 100,000 entries (engine/format/limits.h): the
    // last size leaves room for the operations timed there.
    for (uint64_t step = 1000; step <= max_n; step *= 10) {
      const uint64_t target = step == max_n ? max_n - static_cast<uint64_t>(ops) - 1000 : step;
      while (n < target) {
        CreateEntry(**c, tree, n, payload);
        PlainCreate(plain, n, payload);  // the peer grows alongside (its timing is below)
        ++n;
        if (n % 1000 == 0) Check((*c)->Commit(), "commit");
      }
      Check((*c)->Commit(), "commit");
      Stats create, peer, rename, peer_rename, lookup, list;
      for (int k = 0; k < ops; ++k) {
        // Interleaved: slabfs, then the plain directory.
        uint64_t w0 = WrittenBytes();
        double c0 = CpuMs();
        auto t0 = Clock::now();
        CreateEntry(**c, tree, n, payload);
        Check((*c)->Commit(), "commit");
        auto t1 = Clock::now();
        create.cpu_ms.push_back(CpuMs() - c0);
        create.bytes += WrittenBytes() - w0;
        create.ms.push_back(bench::Seconds(t0, t1) * 1e3);
        w0 = WrittenBytes();
        t0 = Clock::now();
        PlainCreate(plain, n, payload);
        t1 = Clock::now();
        peer.bytes += WrittenBytes() - w0;
        peer.ms.push_back(bench::Seconds(t0, t1) * 1e3);
        ++n;

        const uint64_t victim = rng() % n;
        const std::string from = GroupOf(tree, victim) + "/" + NameOf(victim);
        w0 = WrittenBytes();
        c0 = CpuMs();
        t0 = Clock::now();
        Check((*c)->Rename(from, from + ".r"), "rename");
        Check((*c)->Commit(), "commit");
        t1 = Clock::now();
        rename.cpu_ms.push_back(CpuMs() - c0);
        rename.bytes += WrittenBytes() - w0;
        rename.ms.push_back(bench::Seconds(t0, t1) * 1e3);
        Check((*c)->Rename(from + ".r", from), "rename back");
        const std::string pfrom = plain + "/" + NameOf(victim);
        t0 = Clock::now();
        if (std::rename(pfrom.c_str(), (pfrom + ".r").c_str()) != 0) std::perror("rename");
        bench::FsyncPath(plain);
        t1 = Clock::now();
        peer_rename.ms.push_back(bench::Seconds(t0, t1) * 1e3);
        std::rename((pfrom + ".r").c_str(), pfrom.c_str());

        const uint64_t probe = rng() % n;
        t0 = Clock::now();
        Check(StatusOf((*c)->Resolve(GroupOf(tree, probe) + "/" + NameOf(probe))), "resolve");
        t1 = Clock::now();
        lookup.ms.push_back(bench::Seconds(t0, t1) * 1e3);
      }
      // Listings in a loop of their own: listing 100,000 names allocates
      // and frees as many strings, and run between the operations above it
      // left them a cold cache and a fragmented heap (twice the CPU time
      // per create at 100,000 entries, none of it the create's own).
      for (int k = 0; k < std::min(ops, 20); ++k) {
        auto g = (*c)->Resolve(GroupOf(tree, rng() % n));
        auto t0 = Clock::now();
        Check(StatusOf((*c)->List(*g)), "list");
        auto t1 = Clock::now();
        list.ms.push_back(bench::Seconds(t0, t1) * 1e3);
      }
      Check((*c)->Commit(), "commit");
      if (first_create == 0) {
        first_create = create.median();
        first_create_cpu = create.cpu_median();
        first_rename_cpu = rename.cpu_median();
        first_plain = peer.median();
      }
      std::printf("%-6s %8llu %-7s %s  (%.2fx the plain dir; %.2fx N=1000, CPU %.2fx)\n", lay.c_str(),
                  static_cast<unsigned long long>(target), "create", create.Row().c_str(),
                  create.median() / peer.median(), create.median() / first_create,
                  create.cpu_median() / first_create_cpu);
      std::printf("%-6s %8llu %-7s %s  (%.2fx N=1000)\n", lay.c_str(), static_cast<unsigned long long>(target), "plain",
                  peer.Row().c_str(), peer.median() / first_plain);
      std::printf("%-6s %8llu %-7s %s  (%.2fx the plain dir; CPU %.2fx N=1000)\n", lay.c_str(),
                  static_cast<unsigned long long>(target), "rename", rename.Row().c_str(),
                  rename.median() / peer_rename.median(), rename.cpu_median() / first_rename_cpu);
      if (first_lookup == 0) first_lookup = lookup.median();
      std::printf("%-6s %8llu %-7s %s  (microseconds; %.2fx N=1000)\n", lay.c_str(),
                  static_cast<unsigned long long>(target), "lookup", lookup.Row(1000).c_str(),
                  lookup.median() / first_lookup);
      std::printf("%-6s %8llu %-7s %s\n", lay.c_str(), static_cast<unsigned long long>(target), "list",
                  list.Row().c_str());
      // What the container holds at this size (fsck of the committed state).
      if (auto r = CheckContainer(path, {.verify_data = false})) {
        std::printf(
            "%-6s %8llu container: %.1f MiB, %llu object blocks, %llu free extents, free list in %llu blocks%s\n",
            lay.c_str(), static_cast<unsigned long long>(target), static_cast<double>(r->stats.file_bytes) / 1048576.0,
            static_cast<unsigned long long>(r->stats.object_blocks),
            static_cast<unsigned long long>(r->stats.free_extents),
            static_cast<unsigned long long>(r->stats.free_list_blocks), r->clean() ? "" : " (NOT CLEAN)");
      }
      std::fflush(stdout);
    }
    auto size = std::filesystem::file_size(path);
    std::printf("%-6s container %.1f MiB for %llu entries\n", lay.c_str(), static_cast<double>(size) / 1048576.0,
                static_cast<unsigned long long>(n));
    Check((*c)->Close(), "close");
    std::filesystem::remove(path);
    std::filesystem::remove_all(plain);
  }
  return 0;
}
