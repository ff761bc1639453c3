// A progress bar for long copies (import, export, repack) and the Ctrl-C
// handling that lets them stop cleanly.
//
// The bar is drawn on stderr only when stderr is a terminal, the command was
// not given --quiet, and the copy has run for more than a second (the
// environment variable SLAB_PROGRESS_AFTER=SECONDS changes that); it shows
// bytes and chunks done, the rate and the time left, and is erased when the
// copy ends. A copy calls Advance() after each chunk or block it moves:
// once SIGINT, SIGTERM or SIGHUP arrived, Advance() answers an error, the
// copy unwinds through its normal failure path (nothing committed, the
// temporary destination removed) and the command exits 1.
#ifndef SLABFS_TOOLS_CONVERT_PROGRESS_H_
#define SLABFS_TOOLS_CONVERT_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>

#include "slabfs/status.h"

namespace slabfs::tools {

// While one exists, SIGINT, SIGTERM and SIGHUP set a flag instead of ending
// the process; the previous handlers come back when it is destroyed.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // Whether a signal arrived while a guard existed.
  static bool Interrupted();
  // OK, or an error naming the signal once one arrived.
  static Status Check();
};

class Progress {
 public:
  // `verb` starts the line ("importing", "exporting", "repacking").
  Progress(std::string verb, bool quiet);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // The amount of work, when known (0: unknown, the bar shows counts only).
  void SetTotal(uint64_t bytes, uint64_t chunks);
  // Records work done and redraws at most ten times a second. Answers an
  // error once the copy was interrupted (see InterruptGuard).
  Status Advance(uint64_t bytes, uint64_t chunks);
  // Erases the bar (also done by the destructor).
  void Done();

  uint64_t bytes() const { return bytes_; }
  uint64_t chunks() const { return chunks_; }

 private:
  void Draw(bool force);

  std::string verb_;
  bool enabled_;
  double show_after_;  // seconds
  bool drawn_ = false;
  uint64_t total_bytes_ = 0;
  uint64_t total_chunks_ = 0;
  uint64_t bytes_ = 0;
  uint64_t chunks_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  InterruptGuard guard_;
};

// "1.5 GiB", "12.0 MiB", "512 B".
std::string HumanBytes(double bytes);

}  // namespace slabfs::tools

#endif  // SLABFS_TOOLS_CONVERT_PROGRESS_H_
