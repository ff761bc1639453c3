#include "tools/convert/progress.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace slabfs::tools {
namespace {

volatile sig_atomic_t g_signal = 0;
std::atomic<int> g_guards{0};
struct sigaction g_old_int, g_old_term, g_old_hup;

extern "C" void OnInterrupt(int sig) { g_signal = sig; }

}  // namespace

InterruptGuard::InterruptGuard() {
  if (g_guards.fetch_add(1) != 0) return;
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
  sigaction(SIGHUP, &sa, &g_old_hup);
}

InterruptGuard::~InterruptGuard() {
  if (g_guards.fetch_sub(1) != 1) return;
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  sigaction(SIGHUP, &g_old_hup, nullptr);
}

bool InterruptGuard::Interrupted() { return g_signal != 0; }

Status InterruptGuard::Check() {
  int sig = g_signal;
  if (sig == 0) return Status::OK();
  return Status::IOError(fmt::format("interrupted by {}; nothing was written", strsignal(sig)));
}

std::string HumanBytes(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024 && u < 5) {
    bytes /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} {}", bytes, kUnits[u]) : fmt::format("{:.1f} {}", bytes, kUnits[u]);
}

namespace {

// Seconds before the bar first shows: 1, or SLAB_PROGRESS_AFTER (a
// non-negative number; the tests set 0 so that a copy that is fast on a
// quiet machine still draws it).
double ShowAfter() {
  const char* v = std::getenv("SLAB_PROGRESS_AFTER");
  if (v == nullptr || *v == '\0') return 1.0;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  return (*end == '\0' && s >= 0 && s < 1e6) ? s : 1.0;
}

}  // namespace

Progress::Progress(std::string verb, bool quiet)
    : verb_(std::move(verb)),
      enabled_(!quiet && isatty(STDERR_FILENO) == 1),
      show_after_(ShowAfter()),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() { Done(); }

void Progress::SetTotal(uint64_t bytes, uint64_t chunks) {
  total_bytes_ = bytes;
  total_chunks_ = chunks;
}

Status Progress::Advance(uint64_t bytes, uint64_t chunks) {
  bytes_ += bytes;
  chunks_ += chunks;
  Draw(false);
  return InterruptGuard::Check();
}

void Progress::Draw(bool force) {
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  double elapsed = std::chrono::duration<double>(now - start_).count();
  if (!force && (elapsed < show_after_ || (drawn_ && now - last_draw_ < std::chrono::milliseconds(100)))) {
    return;
  }
  last_draw_ = now;
  double rate = elapsed > 0 ? static_cast<double>(bytes_) / elapsed : 0;
  std::string line = fmt::format("{} {}", verb_, HumanBytes(static_cast<double>(bytes_)));
  if (total_bytes_ > 0) {
    double frac = std::min(1.0, static_cast<double>(bytes_) / static_cast<double>(total_bytes_));
    constexpr int kWidth = 24;
    int filled = static_cast<int>(frac * kWidth);
    line =
        fmt::format("{} [{}{}] {:3.0f}% {} / {}", verb_, std::string(filled, '#'), std::string(kWidth - filled, '.'),
                    frac * 100, HumanBytes(static_cast<double>(bytes_)), HumanBytes(static_cast<double>(total_bytes_)));
  }
  line += total_chunks_ > 0 ? fmt::format(", {}/{} chunks", chunks_, total_chunks_)
                            : fmt::format(", {} chunk{}", chunks_, chunks_ == 1 ? "" : "s");
  line += fmt::format(", {}/s", HumanBytes(rate));
  if (total_bytes_ > bytes_ && rate > 0) {
    auto left = static_cast<uint64_t>(static_cast<double>(total_bytes_ - bytes_) / rate);
    line += fmt::format(", ETA {}:{:02}", left / 60, left % 60);
  }
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::Done() {
  if (!drawn_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace slabfs::tools
