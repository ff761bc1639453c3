// slabfs: mounts a container of chunked arrays as a filesystem.
// See docs/mount.md.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fusefs/daemon.h"
#include "fusefs/filesystem.h"
#include "fusefs/options.h"

int main(int argc, char** argv) {
  using namespace slabfs::fusefs;
  try {
    std::vector<std::string> args(argv, argv + argc);
    const std::string program = argc > 0 ? argv[0] : "slabfs";
    auto cfg = ParseCommandLine(args);
    if (!cfg) {
      fmt::print(stderr, "slabfs: {}\nTry '{} --help'.\n", cfg.error().message(), program);
      return 2;
    }
    if (cfg->show_help) {
      fmt::print("{}\nlibfuse options:\n", Usage(program));
      std::fflush(stdout);
      fuse_cmdline_help();
      fuse_lowlevel_help();
      return 0;
    }
    if (cfg->show_version) {
      fmt::print("slabfs {}\n", kVersion);
      std::fflush(stdout);
      fuse_lowlevel_version();
      return 0;
    }
    if (slabfs::Status ok = CheckFuseOptions(*cfg); !ok.ok()) {
      fmt::print(stderr, "slabfs: {}\nTry '{} --help'.\n", ok.message(), program);
      return 2;
    }
    slabfs::Status s = RunDaemon(*cfg);
    if (!s.ok()) {
      fmt::print(stderr, "slabfs: {}\n", s.ToString());
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "slabfs: unexpected error: {}\n", e.what());
    return 1;
  }
}
