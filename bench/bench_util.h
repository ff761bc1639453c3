// What every benchmark program shares: timing and the header line that
// names the machine a table was measured on.
#ifndef SLABFS_BENCH_BENCH_UTIL_H_
#define SLABFS_BENCH_BENCH_UTIL_H_

#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace slabfs::bench {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

inline std::string CpuModel() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

// "# NAME  machine: CPU, N cores, kernel K"
inline void PrintMachine(const char* name) {
  utsname u{};
  uname(&u);
  std::printf("# %s  machine: %s, %ld cores, kernel %s\n", name, CpuModel().c_str(), sysconf(_SC_NPROCESSORS_ONLN),
              u.release);
}

// "a;b;;c" -> {"a", "b", "c"}: the lists of pipelines and chunk shapes the
// benchmarks take.
inline std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> out;
  for (;;) {
    size_t semi = text.find(';');
    if (semi != 0 && !text.empty()) out.emplace_back(text.substr(0, semi));
    if (semi == std::string_view::npos) return out;
    text.remove_prefix(semi + 1);
  }
}

// fsync of a file by name: a peer that does not sync (libhdf5) is made to,
// so that write times compare bytes on disk with bytes on disk.
inline bool FsyncPath(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  const bool ok = fsync(fd) == 0;
  close(fd);
  return ok;
}

// min/median/max of a benchmark's rounds, and "0.012/0.013/0.015".
struct Spread {
  double min = 0, median = 0, max = 0;
};

inline Spread SpreadOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v.front(), v[v.size() / 2], v.back()};
}

inline std::string Format(const Spread& s) {
  char b[64];
  std::snprintf(b, sizeof b, "%.3f/%.3f/%.3f", s.min, s.median, s.max);
  return b;
}

// The command line of a benchmark, flag by flag:
//   Args args(argc, argv, "bench_x", Usage);
//   while (args.Next()) {
//     if (args.Is("--n")) n = args.Number();
//     else if (args.Is("--keep")) keep = true;
//     else args.Bad();
//   }
// A missing or bad value prints one line naming the flag and exits 2.
class Args {
 public:
  Args(int argc, char** argv, const char* program, void (*usage)())
      : argc_(argc), argv_(argv), program_(program), usage_(usage) {}
  bool Next() { return ++i_ < argc_; }
  bool Is(std::string_view flag) const { return flag == argv_[i_]; }
  std::string Value() {
    if (i_ + 1 >= argc_) {
      std::fprintf(stderr, "%s: %s needs a value\n", program_, argv_[i_]);
      std::exit(2);
    }
    return argv_[++i_];
  }
  // A positive integer.
  uint64_t Number() {
    const char* flag = argv_[i_];
    const std::string v = Value();
    char* end = nullptr;
    const uint64_t x = std::strtoull(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || x == 0) {
      std::fprintf(stderr, "%s: %s wants a positive number, not '%s'\n", program_, flag, v.c_str());
      std::exit(2);
    }
    return x;
  }
  [[noreturn]] void Bad() {
    usage_();
    std::exit(2);
  }

 private:
  int argc_;
  char** argv_;
  int i_ = 0;
  const char* program_;
  void (*usage_)();
};

}  // namespace slabfs::bench

#endif  // SLABFS_BENCH_BENCH_UTIL_H_
