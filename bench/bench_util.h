// What every benchmark program shares: timing and the header line that
// names the machine a table was measured on.
#ifndef SLABFS_BENCH_BENCH_UTIL_H_
#define SLABFS_BENCH_BENCH_UTIL_H_

#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

namespace slabfs::bench {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

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

}  // namespace slabfs::bench

#endif  // SLABFS_BENCH_BENCH_UTIL_H_
