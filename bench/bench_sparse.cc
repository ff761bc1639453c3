// bench_sparse: the sparse-chunks RFC's detector stream. What does a sparse
// dataset cost, in space and time, for frames of which only a small part
// is defined, and how does it compare with storing the same frames dense
// and deflated?
//
// Workload: --frames N frames of S x S u2 (default 1000 of 2048 x 2048),
// appended one at a time (Resize by one frame, then Write) to a dataset of
// shape (unlimited, S, S). Every 100th frame (frames 99, 199, ...) is stored
// in full; every frame defines, depending on the variant,
//   a: one rectangular region of interest of about 10% of the frame
//      (S*sqrt(0.1) square, 648 x 648 for S = 2048), its corner moving
//      along a smooth Lissajous path from frame to frame;
//   b: 50-100 groups of 5-10 contiguous pixels along a row, at random
//      places (they may overlap or touch; the defined runs count them
//      merged).
// Values are pseudo-random 12-bit counts, a function of (frame, y, x), so
// that every read checks what it gets; undefined pixels are the fill value
// 0. Fixed seeds: every run writes the same bytes.
//
// Each dataset configuration gets a fresh container and one row:
//   ingest   fps and MB/s over the engine calls only (Resize, Write, the
//            commits every --commit-every frames and the final Close);
//            "def MB/s" counts defined bytes, "frame MB/s" whole frames
//            (S*S*2 bytes each: the rate a detector stream must sustain);
//            "commit s" is the part spent in the commits and the close;
//   space    bytes stored (chunk data, DatasetInfo::stored_bytes), the
//            ratio to the defined bytes (defined elements x 2), and the
//            target ratio stored / (defined bytes + 8 x defined runs);
//            the container file size is in the notes below the table;
//   queries  each from a fresh read-only open (empty chunk cache; the file
//            is in the page cache): Defined() over the whole dataset, its
//            box count; DefinedRuns() over the whole dataset; reading back
//            every frame's regions of interest (a: the ROI box of each
//            frame; b: each group, one Read per group) with "ROI MB/s" of
//            element bytes read.
// The sparse rows check that the engine's defined count, runs and stored
// chunks match the generator exactly: stored chunks = the chunks the
// generator defines something in, so "empty" (stored chunks with nothing
// defined, found from Defined() per stored chunk) must be 0. The dense
// rows write every frame whole (zeros outside the ROI, as a detector
// stream gives them) into a dense dataset with the same chunk shape, and
// may cover only the first --dense-frames frames (deflating whole frames
// costs CPU). Target (issue 5), checked on the unfiltered sparse rows:
// stored <= 1.25 x (defined bytes + 8 x defined runs), and no stored chunk
// without a defined element.
//
// Chunk shape: default 1x1024x1024. The unfiltered sparse rows at full size
// (1000 frames of 2048^2; 2 cores, load average 1.1-1.2; noisy to +-30%):
//
//   chunks       a: fps  defined s  ROI s | b: fps  stored/def*  defined s  ROI s | chunks a, b
//   1x256x256       556    0.87     0.64  |    447     1.64         0.72   0.79  | 11930, 44666
//   1x512x512       676    0.72     0.55  |    356     1.39         0.65   0.82  |  4679, 15842
//   1x1024x1024     685    0.53     0.56  |    546     1.29         0.49   0.70  |  1739,  4000
//   (* b without the chunk rows holding a full frame: the groups alone;
//   stored/def of a is 1.004-1.005 for every shape)
//
// Space does not choose by much: every shape passes the target with room,
// and bigger chunks pay fewer 8-byte headers and runs split at chunk edges.
// A first sweep (engine before 2026-11-22 01:20) had 1x256x256 ahead,
// because the sparse decoder then wrote the fill value one element at a
// time, so every query cost the whole volume of the chunks it touched;
// with that fixed, 1x1024x1024 ingests fastest, answers Defined() fastest,
// stores least and needs the smallest index (1000 frames x 4 chunks).
// Smaller chunks still suit reads of small windows in cold frames: a read
// of an uncached chunk decodes all of it (2 MiB here).
//
// Holes (--variant holes; issue 21, item 4: a hole costs nothing to walk).
// What do lseek's SEEK_DATA and SEEK_HOLE (fusefs/seek.cc, 4 KiB regions)
// and CountDefined cost over a dataset of 2^62 bytes holding a few chunks?
// A u1 dataset of shape (2^62,), chunks of 2^20 (a b-tree index: 2^42
// chunks), sparse, with one byte defined at 0, 2^36, 2^40, 2^50, 2^61 and
// 2^62 - 1; the same dense (those chunks stored, and 256 MiB of chunks from
// 0); and a dense fixed-array one of 2^38 bytes (2^28 chunks of 1 KiB) with
// three chunks stored. Each row times one call, two ways, in interleaved
// rounds (--hole-rounds, min/median/max):
//   windowed  the seek as it was: Dataset::DefinedRuns asked in windows of
//             64 Ki elements doubling to 4 Mi (fusefs WalkInWindows), and
//             CountDefined's old way, Defined() over everything, summed;
//   walk      the seek over Dataset::ForEachDefinedRun, which visits only
//             the stored chunks, and CountDefined().
// The windowed seek over a hole longer than --max-windowed-bytes (default
// 2^41) is not run (2^50 bytes would take hours): its row shows the time
// the 2^40-byte row's rate gives, marked "~". Both ways are checked to
// answer the same. Indexes are warm (the first round is not timed).
//
//   bench_sparse [--frames 1000] [--size 2048] [--chunk '1x1024x1024;...']
//                [--variant a|b|both|holes] [--hole-rounds 7] [--max-windowed-bytes N]
//                [--sparse-filters 'none;shuffle,deflate=1']
//                [--dense-filters 'shuffle,deflate=6;shuffle,deflate=1']
//                [--dense-frames N] [--commit-every 100] [--cache-mb 64]
//                [--path P] [--keep]
//
// --chunk, --sparse-filters and --dense-filters are ';'-separated lists;
// the sparse rows are every chunk shape with every sparse pipeline, the
// dense rows every dense pipeline with the first chunk shape. "none" is no
// filter; an empty list skips those rows. Containers are P.<row>, removed
// after their row unless --keep.
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "bench/bench_util.h"
#include "fusefs/seek.h"
#include "slabfs/slabfs.h"

using namespace slabfs;
using bench::Clock;
using bench::Seconds;

namespace {

struct Config {
  uint64_t frames = 1000, size = 2048, dense_frames = 0 /* 0: --frames */, commit_every = 100, cache_mb = 64;
  std::vector<Dims> chunks;
  std::vector<std::string> sparse_filters, dense_filters;
  std::string variants = "ab";
  std::string path = "/tmp/slabfs_bench_sparse.slab";
  bool keep = false;
  uint64_t hole_rounds = 7, max_windowed_bytes = uint64_t{1} << 41;
};

[[noreturn]] void Die(const Status& s, const std::string& what) {
  std::fprintf(stderr, "bench_sparse: %s: %s\n", what.c_str(), s.ToString().c_str());
  std::exit(1);
}

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "bench_sparse: %s\n", what.c_str());
  std::exit(1);
}

[[noreturn]] void Usage() {
  std::fprintf(stderr,
               "usage: bench_sparse [--frames N] [--size S] [--chunk '1x1024x1024;...'] [--variant a|b|both|holes]\n"
               "                    [--hole-rounds R] [--max-windowed-bytes N]\n"
               "                    [--sparse-filters 'none;shuffle,deflate=1'] [--dense-filters 'shuffle,deflate=6']\n"
               "                    [--dense-frames N] [--commit-every K] [--cache-mb M] [--path P] [--keep]\n");
  std::exit(2);
}

// "1x256x256" -> {1, 256, 256}.
Dims ParseChunk(const std::string& text) {
  Dims out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t x = text.find('x', pos);
    if (x == std::string::npos) x = text.size();
    std::string part = text.substr(pos, x - pos);
    char* end = nullptr;
    uint64_t v = std::strtoull(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || v == 0) Fail("--chunk wants shapes like 1x256x256, not '" + text + "'");
    out.push_back(v);
    pos = x + 1;
  }
  if (out.size() != 3) Fail("--chunk wants three dimensions (frames x rows x columns), not '" + text + "'");
  return out;
}

std::string ChunkName(const Dims& c) {
  return std::to_string(c[0]) + "x" + std::to_string(c[1]) + "x" + std::to_string(c[2]);
}

// ------------------------------------------------------------ the workload

// The value of pixel (y, x) of frame f: 12 pseudo-random bits, never the
// fill value 0.
inline uint16_t Pixel(uint64_t f, uint64_t y, uint64_t x) {
  uint64_t h = (f * 0x9E3779B97F4A7C15ull) ^ ((y << 20 | x) * 0xC2B2AE3D27D4EB4Full);
  h ^= h >> 31;
  h *= 0xD6E8FEB86659FD93ull;
  return static_cast<uint16_t>(1 + (h >> 52) % 4095);
}

// A box inside one frame.
struct Rect {
  uint64_t y, x, h, w;
};

// Frame f of the stream: the regions of interest it defines (variant a: one
// box; b: 1 x len groups) and whether it is stored in full.
struct Frame {
  bool full = false;
  std::vector<Rect> rois;
};

class Workload {
 public:
  Workload(char variant, uint64_t size) : variant_(variant), size_(size) {
    side_ = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(static_cast<double>(size) * std::sqrt(0.1))));
  }

  char variant() const { return variant_; }
  uint64_t size() const { return size_; }
  uint64_t roi_side() const { return side_; }

  Frame Make(uint64_t f) const {
    Frame fr;
    fr.full = f % 100 == 99;
    if (variant_ == 'a') {
      // The corner follows a Lissajous path over the frame: it moves by a
      // few pixels to ~35 pixels per frame, in every direction.
      const double span = static_cast<double>(size_ - side_);
      const double t = static_cast<double>(f);
      const auto y = static_cast<uint64_t>(std::llround(span * (0.5 + 0.5 * std::sin(t / 29.0))));
      const auto x = static_cast<uint64_t>(std::llround(span * (0.5 + 0.5 * std::cos(t / 41.0 + 1.0))));
      fr.rois.push_back({y, x, side_, side_});
    } else {
      std::mt19937_64 rng(0x5EED0000ull + f);
      const uint64_t groups = 50 + rng() % 51;
      for (uint64_t g = 0; g < groups; ++g) {
        const uint64_t len = std::min<uint64_t>(5 + rng() % 6, size_);
        const uint64_t y = rng() % size_, x = rng() % (size_ - len + 1);
        fr.rois.push_back({y, x, 1, len});
      }
    }
    return fr;
  }

  // The defined runs of a frame, as sorted, merged (offset in frame, length).
  std::vector<ElementRun> Runs(const Frame& fr) const {
    std::vector<ElementRun> runs;
    if (fr.full) {
      runs.push_back({0, size_ * size_});
      return runs;
    }
    for (const Rect& r : fr.rois)
      for (uint64_t i = 0; i < r.h; ++i) runs.push_back({(r.y + i) * size_ + r.x, r.w});
    std::sort(runs.begin(), runs.end(), [](const ElementRun& a, const ElementRun& b) { return a.first < b.first; });
    std::vector<ElementRun> merged;
    for (const ElementRun& r : runs) {
      if (!merged.empty() && r.first <= merged.back().first + merged.back().count) {
        merged.back().count = std::max(merged.back().count, r.first + r.count - merged.back().first);
      } else {
        merged.push_back(r);
      }
    }
    return merged;
  }

  // Frame f as the caller writes it into a dense dataset: the defined
  // pixels, 0 elsewhere.
  void FillDense(uint64_t f, const Frame& fr, uint16_t* out) const {
    if (fr.full) {
      for (uint64_t y = 0; y < size_; ++y)
        for (uint64_t x = 0; x < size_; ++x) out[y * size_ + x] = Pixel(f, y, x);
      return;
    }
    std::fill(out, out + size_ * size_, uint16_t{0});
    for (const Rect& r : fr.rois)
      for (uint64_t y = r.y; y < r.y + r.h; ++y)
        for (uint64_t x = r.x; x < r.x + r.w; ++x) out[y * size_ + x] = Pixel(f, y, x);
  }

 private:
  char variant_;
  uint64_t size_;
  uint64_t side_;
};

void FillRect(uint64_t f, const Rect& r, std::vector<uint16_t>* out) {
  out->resize(r.h * r.w);
  uint16_t* p = out->data();
  for (uint64_t y = r.y; y < r.y + r.h; ++y)
    for (uint64_t x = r.x; x < r.x + r.w; ++x) *p++ = Pixel(f, y, x);
}

void CheckRect(uint64_t f, const Rect& r, const std::vector<uint16_t>& got, const char* where) {
  const uint16_t* p = got.data();
  for (uint64_t y = r.y; y < r.y + r.h; ++y) {
    for (uint64_t x = r.x; x < r.x + r.w; ++x, ++p) {
      if (*p != Pixel(f, y, x)) {
        Fail(std::string(where) + ": read " + std::to_string(*p) + " at (" + std::to_string(f) + ", " +
             std::to_string(y) + ", " + std::to_string(x) + "), wrote " + std::to_string(Pixel(f, y, x)));
      }
    }
  }
}

// What the generator defines over the first `frames` frames: the expected
// figures every sparse row is checked against.
struct Expected {
  uint64_t frames = 0, defined = 0, runs = 0, roi_elements = 0, roi_reads = 0;
  std::vector<bool> chunk_used;  // by linear position in the chunk grid
  uint64_t chunks_used = 0;
  // The same for the frames in chunk rows (chunk[0] frames each) without a
  // full frame: the figures that show the sparse encoding, not the ten
  // full frames that dominate the defined bytes.
  std::vector<bool> full_row;  // by chunk row
  uint64_t partial_defined = 0, partial_runs = 0;
};

Expected Expect(const Workload& w, uint64_t frames, const Dims& chunk) {
  Expected e;
  e.frames = frames;
  const uint64_t s = w.size(), frame_elems = s * s;
  const uint64_t g1 = (s + chunk[1] - 1) / chunk[1], g2 = (s + chunk[2] - 1) / chunk[2];
  const uint64_t chunk_rows = (frames + chunk[0] - 1) / chunk[0];
  e.chunk_used.assign(chunk_rows * g1 * g2, false);
  e.full_row.assign(chunk_rows, false);
  for (uint64_t f = 0; f < frames; ++f)
    if (w.Make(f).full) e.full_row[f / chunk[0]] = true;
  uint64_t last_end = UINT64_MAX, partial_last_end = UINT64_MAX;                     // global end of the previous run
  auto mark = [&](uint64_t f, uint64_t y0, uint64_t y1, uint64_t x0, uint64_t x1) {  // inclusive pixel ranges
    for (uint64_t cy = y0 / chunk[1]; cy <= y1 / chunk[1]; ++cy)
      for (uint64_t cx = x0 / chunk[2]; cx <= x1 / chunk[2]; ++cx) {
        const uint64_t linear = ((f / chunk[0]) * g1 + cy) * g2 + cx;
        if (!e.chunk_used[linear]) {
          e.chunk_used[linear] = true;
          ++e.chunks_used;
        }
      }
  };
  for (uint64_t f = 0; f < frames; ++f) {
    const Frame fr = w.Make(f);
    for (const ElementRun& r : w.Runs(fr)) {
      e.defined += r.count;
      const uint64_t first = f * frame_elems + r.first;
      if (first != last_end) ++e.runs;
      last_end = first + r.count;
      if (!e.full_row[f / chunk[0]]) {
        e.partial_defined += r.count;
        if (first != partial_last_end) ++e.partial_runs;
        partial_last_end = first + r.count;
      }
    }
    for (const Rect& r : fr.rois) {
      e.roi_elements += r.h * r.w;
      ++e.roi_reads;
    }
    if (fr.full)
      mark(f, 0, s - 1, 0, s - 1);
    else
      for (const Rect& r : fr.rois) mark(f, r.y, r.y + r.h - 1, r.x, r.x + r.w - 1);
  }
  return e;
}

// ------------------------------------------------------------ one row

struct Row {
  bool sparse = true;
  std::string chunks, filters;
  uint64_t frames = 0;
  double ingest_s = 0, commit_s = 0;  // commit_s: the commits and the close, part of ingest_s
  uint64_t defined = 0, runs = 0, stored_bytes = 0, file_bytes = 0, index_bytes = 0, chunks_stored = 0;
  uint64_t empty_chunks = 0;
  // Sparse rows: the chunk rows without a full frame alone.
  uint64_t partial_stored = 0, partial_defined = 0, partial_runs = 0;
  double defined_s = 0, runs_s = 0, roi_s = 0;
  uint64_t boxes = 0, roi_elements = 0, roi_reads = 0;
};

std::unique_ptr<Container> OpenForReading(const std::string& path, uint64_t cache_mb) {
  auto c = Container::Open(path, {.read_only = true, .cache_bytes = cache_mb << 20});
  if (!c) Die(c.error(), "open " + path);
  return std::move(*c);
}

Dataset OpenData(const Container& c) {
  auto ds = c.OpenDataset("/frames");
  if (!ds) Die(ds.error(), "open dataset");
  return *ds;
}

uint64_t Volume(const Box& b) {
  uint64_t v = 1;
  for (uint64_t x : b.count) v *= x;
  return v;
}

void Ingest(const Config& cfg, const Workload& w, bool sparse, const Dims& chunk, const std::string& filters,
            uint64_t frames, const std::string& path, Row* row) {
  const uint64_t s = w.size();
  unlink(path.c_str());
  auto c = Container::Open(path, {.create = true, .cache_bytes = cfg.cache_mb << 20});
  if (!c) Die(c.error(), "create " + path);
  auto ds = (*c)->CreateDataset("/frames", {.dtype = DType::kU2,
                                            .shape = {0, s, s},
                                            .max_shape = {kUnlimited, s, s},
                                            .chunks = chunk,
                                            .filters = filters == "none" ? "" : filters,
                                            .sparse = sparse});
  if (!ds) Die(ds.error(), "create dataset (chunks " + ChunkName(chunk) + ", filters '" + filters + "')");
  std::vector<uint16_t> buf;
  double engine_s = 0;
  for (uint64_t f = 0; f < frames; ++f) {
    // Generating the frame is the detector's work, not the engine's: only
    // the engine calls are timed.
    const Frame fr = w.Make(f);
    std::vector<std::vector<uint16_t>> parts;
    if (!sparse) {
      buf.resize(s * s);
      w.FillDense(f, fr, buf.data());
    } else if (fr.full) {
      buf.resize(s * s);
      FillRect(f, {0, 0, s, s}, &buf);
    } else {
      parts.resize(fr.rois.size());
      for (size_t k = 0; k < fr.rois.size(); ++k) FillRect(f, fr.rois[k], &parts[k]);
    }
    auto t0 = Clock::now();
    Status st = ds->Resize({f + 1, s, s});
    if (!st.ok()) Die(st, "resize to " + std::to_string(f + 1) + " frames");
    if (!sparse || fr.full) {
      st = ds->Write(Slab::Box({f, 0, 0}, {1, s, s}), buf.data());
      if (!st.ok()) Die(st, "write frame " + std::to_string(f));
    } else {
      for (size_t k = 0; k < fr.rois.size(); ++k) {
        const Rect& r = fr.rois[k];
        st = ds->Write(Slab::Box({f, r.y, r.x}, {1, r.h, r.w}), parts[k].data());
        if (!st.ok()) Die(st, "write frame " + std::to_string(f));
      }
    }
    if ((f + 1) % cfg.commit_every == 0 && f + 1 < frames) {
      auto t1 = Clock::now();
      st = (*c)->Commit();
      if (!st.ok()) Die(st, "commit");
      row->commit_s += Seconds(t1, Clock::now());
    }
    engine_s += Seconds(t0, Clock::now());
  }
  auto t0 = Clock::now();
  Status st = (*c)->Close();
  if (!st.ok()) Die(st, "close");
  engine_s += Seconds(t0, Clock::now());
  row->commit_s += Seconds(t0, Clock::now());
  row->ingest_s = engine_s;
}

Row RunOne(const Config& cfg, const Workload& w, bool sparse, const Dims& chunk, const std::string& filters,
           uint64_t frames, const std::string& path) {
  Row row;
  row.sparse = sparse;
  row.chunks = ChunkName(chunk);
  row.filters = filters;
  row.frames = frames;
  const uint64_t s = w.size();
  const Expected want = Expect(w, frames, chunk);
  Ingest(cfg, w, sparse, chunk, filters, frames, path, &row);

  {  // Figures, stored chunks; Defined() over everything.
    auto c = OpenForReading(path, cfg.cache_mb);
    Dataset ds = OpenData(*c);
    DatasetInfo info = ds.info();
    row.stored_bytes = info.stored_bytes;
    row.index_bytes = info.index_bytes;
    row.chunks_stored = info.allocated_chunks;
    row.file_bytes = c->space().file_bytes;
    row.filters = info.filters.empty() ? "none" : info.filters;
    if (info.shape != Dims{frames, s, s}) Fail("the dataset has the wrong shape after ingest");
    auto t0 = Clock::now();
    auto boxes = ds.Defined(Slab::All(info.shape));
    row.defined_s = Seconds(t0, Clock::now());
    if (!boxes) Die(boxes.error(), "defined");
    row.boxes = boxes->size();
    uint64_t in_boxes = 0;
    for (const Box& b : *boxes) in_boxes += Volume(b);
    auto count = ds.CountDefined();
    if (!count) Die(count.error(), "count defined");
    row.defined = *count;
    if (sparse) {
      if (row.defined != want.defined || in_boxes != want.defined || info.defined_elements != want.defined)
        Fail("defined elements: engine counts " + std::to_string(row.defined) + ", boxes hold " +
             std::to_string(in_boxes) + ", info says " + std::to_string(info.defined_elements) +
             ", the generator defined " + std::to_string(want.defined));
      // Every stored chunk must hold a defined element: the stored chunks
      // are exactly the chunks the generator defined something in, and each
      // one's own box has a defined element.
      auto stored = ds.StoredChunks();
      if (!stored) Die(stored.error(), "stored chunks");
      if (stored->size() != row.chunks_stored) Fail("StoredChunks and info disagree on the chunk count");
      const uint64_t g1 = (s + chunk[1] - 1) / chunk[1], g2 = (s + chunk[2] - 1) / chunk[2];
      uint64_t unexpected = 0;
      for (const StoredChunk& sc : *stored) {
        if (!want.full_row[sc.coords[0]]) row.partial_stored += sc.bytes;
        const uint64_t linear = (sc.coords[0] * g1 + sc.coords[1]) * g2 + sc.coords[2];
        if (linear >= want.chunk_used.size() || !want.chunk_used[linear]) ++unexpected;
        Dims start(3), cnt(3);
        for (size_t d = 0; d < 3; ++d) {
          start[d] = sc.coords[d] * chunk[d];
          cnt[d] = std::min(chunk[d], info.shape[d] - start[d]);
        }
        auto in_chunk = ds.Defined(Slab::Box(start, cnt));
        if (!in_chunk) Die(in_chunk.error(), "defined in a chunk");
        if (in_chunk->empty()) ++row.empty_chunks;
      }
      if (unexpected != 0 || stored->size() != want.chunks_used)
        Fail(std::to_string(stored->size()) + " chunks stored, " + std::to_string(unexpected) +
             " of them where the generator defined nothing; it defined something in " +
             std::to_string(want.chunks_used));
      row.partial_defined = want.partial_defined;
      row.partial_runs = want.partial_runs;
    } else {
      row.defined = want.defined;  // a dense dataset defines every element it stores
    }
  }
  {  // DefinedRuns() over everything.
    auto c = OpenForReading(path, cfg.cache_mb);
    Dataset ds = OpenData(*c);
    auto t0 = Clock::now();
    auto runs = ds.DefinedRuns(0, ds.num_elements());
    row.runs_s = Seconds(t0, Clock::now());
    if (!runs) Die(runs.error(), "defined runs");
    if (sparse) {
      uint64_t total = 0;
      for (const ElementRun& r : *runs) total += r.count;
      if (runs->size() != want.runs || total != want.defined)
        Fail("DefinedRuns gives " + std::to_string(runs->size()) + " runs of " + std::to_string(total) +
             " elements; the generator defined " + std::to_string(want.runs) + " runs of " +
             std::to_string(want.defined));
    }
    row.runs = want.runs;
  }
  {  // Every region of interest, frame by frame.
    auto c = OpenForReading(path, cfg.cache_mb);
    Dataset ds = OpenData(*c);
    std::vector<uint16_t> got;
    for (uint64_t f = 0; f < frames; ++f) {
      const Frame fr = w.Make(f);
      for (const Rect& r : fr.rois) {
        got.resize(r.h * r.w);
        auto t0 = Clock::now();
        Status st = ds.Read(Slab::Box({f, r.y, r.x}, {1, r.h, r.w}), got.data());
        row.roi_s += Seconds(t0, Clock::now());
        if (!st.ok()) Die(st, "read a region of interest of frame " + std::to_string(f));
        CheckRect(f, r, got, "region of interest");
      }
    }
    row.roi_elements = want.roi_elements;
    row.roi_reads = want.roi_reads;
  }
  if (!cfg.keep) unlink(path.c_str());
  return row;
}

double Mb(uint64_t bytes) { return static_cast<double>(bytes) / 1e6; }

void PrintRow(const Row& r, uint64_t frame_bytes) {
  const double def_bytes = static_cast<double>(r.defined) * 2;
  const double target_base = def_bytes + 8.0 * static_cast<double>(r.runs);
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.3f", static_cast<double>(r.stored_bytes) / target_base);
  const std::string target = r.sparse ? ratio : "-";
  std::printf(
      "%-6s %-11s %-17s %6lu %8.0f %8.1f %9.0f %8.2f %10.2f %8.3f %8s %7lu %5s %9.3f %8lu %8.3f %8.3f %9.0f %8.1f\n",
      r.sparse ? "sparse" : "dense", r.chunks.c_str(), r.filters.c_str(), r.frames,
      static_cast<double>(r.frames) / r.ingest_s, def_bytes / 1e6 / r.ingest_s,
      static_cast<double>(r.frames * frame_bytes) / 1e6 / r.ingest_s, r.commit_s, Mb(r.stored_bytes),
      static_cast<double>(r.stored_bytes) / def_bytes, target.c_str(), r.chunks_stored,
      r.sparse ? std::to_string(r.empty_chunks).c_str() : "-", r.defined_s, r.boxes, r.runs_s, r.roi_s,
      static_cast<double>(r.roi_reads) / r.roi_s, static_cast<double>(r.roi_elements) * 2 / 1e6 / r.roi_s);
  std::fflush(stdout);
}

void RunVariant(const Config& cfg, char variant, int* failures) {
  const Workload w(variant, cfg.size);
  const uint64_t s = cfg.size, frame_bytes = s * s * 2;
  const uint64_t dense_frames = std::min(cfg.frames, cfg.dense_frames == 0 ? cfg.frames : cfg.dense_frames);
  const Expected all = Expect(w, cfg.frames, {1, s, s});
  std::printf("\n## variant %c: %lu frames of %lux%lu u2, frames 99, 199, ... stored in full; ", variant, cfg.frames, s,
              s);
  if (variant == 'a')
    std::printf("each frame one %lux%lu ROI (%.1f%% of a frame) moving along a Lissajous path\n", w.roi_side(),
                w.roi_side(), 100.0 * static_cast<double>(w.roi_side() * w.roi_side()) / static_cast<double>(s * s));
  else
    std::printf("each frame 50-100 groups of 5-10 contiguous pixels at random places (%lu groups in all)\n",
                all.roi_reads);
  std::printf(
      "# defined: %lu elements = %.1f MB in %lu runs (%.1f%% of %.1f MB of frames); ROI reads: %lu reads of "
      "%.1f MB\n",
      all.defined, Mb(all.defined * 2), all.runs,
      100.0 * static_cast<double>(all.defined) / static_cast<double>(cfg.frames * s * s), Mb(cfg.frames * frame_bytes),
      all.roi_reads, Mb(all.roi_elements * 2));
  std::printf("%-6s %-11s %-17s %6s %8s %8s %9s %8s %10s %8s %8s %7s %5s %9s %8s %8s %8s %9s %8s\n", "kind", "chunks",
              "filters", "frames", "fps", "def MB/s", "frame MB/s", "commit s", "stored MB", "st/def", "target",
              "chunks", "empty", "defined s", "boxes", "runs s", "ROI s", "ROI rd/s", "ROI MB/s");
  std::fflush(stdout);

  std::vector<Row> rows;
  int n = 0;
  auto path_of = [&]() { return cfg.path + "." + std::string(1, variant) + std::to_string(++n); };
  for (const Dims& chunk : cfg.chunks) {
    for (const std::string& filters : cfg.sparse_filters) {
      rows.push_back(RunOne(cfg, w, true, chunk, filters, cfg.frames, path_of()));
      PrintRow(rows.back(), frame_bytes);
    }
  }
  for (const std::string& filters : cfg.dense_filters) {
    rows.push_back(RunOne(cfg, w, false, cfg.chunks.front(), filters, dense_frames, path_of()));
    PrintRow(rows.back(), frame_bytes);
  }

  std::printf("# notes (variant %c):\n", variant);
  for (const Row& r : rows) {
    std::printf("#   %-6s %-11s %-17s container file %.1f MB, chunk index %.3f MB, %.1f B stored per chunk\n",
                r.sparse ? "sparse" : "dense", r.chunks.c_str(), r.filters.c_str(), Mb(r.file_bytes), Mb(r.index_bytes),
                r.chunks_stored == 0 ? 0.0 : static_cast<double>(r.stored_bytes) / r.chunks_stored);
  }
  if (dense_frames < cfg.frames && !cfg.dense_filters.empty())
    std::printf(
        "#   the dense rows cover only the first %lu frames (--dense-frames): their MB and rates are for "
        "those frames\n",
        dense_frames);
  for (const Row& r : rows) {
    if (!r.sparse) continue;
    const uint64_t def_bytes = r.defined * 2;
    const double limit = 1.25 * static_cast<double>(def_bytes + 8 * r.runs);
    const bool filtered = r.filters != "none";
    const bool space_ok = static_cast<double>(r.stored_bytes) <= limit;
    const bool empty_ok = r.empty_chunks == 0;
    std::printf(
        "# target %c %-11s %-17s stored %lu B %s 1.25 x (%lu B defined + 8 x %lu runs) = %.0f B: %s; "
        "stored chunks with nothing defined: %lu: %s\n",
        variant, r.chunks.c_str(), r.filters.c_str(), r.stored_bytes, space_ok ? "<=" : ">", def_bytes, r.runs, limit,
        filtered ? (space_ok ? "pass (filtered, not the target)" : "n/a (filtered)") : (space_ok ? "PASS" : "FAIL"),
        r.empty_chunks, empty_ok ? "PASS" : "FAIL");
    if (!filtered && !space_ok) ++*failures;
    if (!empty_ok) ++*failures;
    if (r.partial_defined != 0) {
      const uint64_t part_bytes = r.partial_defined * 2;
      const double part_limit = 1.25 * static_cast<double>(part_bytes + 8 * r.partial_runs);
      const bool part_ok = static_cast<double>(r.partial_stored) <= part_limit;
      std::printf(
          "#   without the chunk rows holding a full frame: stored %lu B = %.3f x defined, %.3f x (%lu B "
          "defined + 8 x %lu runs): %s\n",
          r.partial_stored, static_cast<double>(r.partial_stored) / static_cast<double>(part_bytes),
          static_cast<double>(r.partial_stored) / static_cast<double>(part_bytes + 8 * r.partial_runs), part_bytes,
          r.partial_runs, filtered ? "(filtered)" : (part_ok ? "PASS" : "FAIL"));
      if (!filtered && !part_ok) ++*failures;
    }
  }
  std::fflush(stdout);
}

// ------------------------------------------------------------ holes

namespace holes {

using fusefs::SeekKind;
using fusefs::SeekView;

constexpr uint64_t kChunk = uint64_t{1} << 20;

// One row: a call timed two ways; a way that is not run has no times.
struct HoleRow {
  std::string what;
  std::function<std::optional<uint64_t>()> windowed, walk;
  uint64_t expect = 0;
  uint64_t hole_bytes = 0;  // the bytes a windowed seek steps through (0: not a seek over a hole)
  std::vector<double> t_windowed, t_walk;
};

Dataset Make(Container& c, const std::string& path, const DatasetOptions& o) {
  auto ds = c.CreateDataset(path, o);
  if (!ds) Die(ds.error(), "create " + path);
  return *ds;
}

void Put(Dataset& ds, uint64_t at, uint64_t n = 1) {
  std::vector<uint8_t> v(n, 1);
  Status s = ds.WriteElements(at, n, v.data());
  if (!s.ok()) Die(s, "write at " + std::to_string(at));
}

SeekView ViewOf(const Dataset& ds) {
  return SeekView{.size_bytes = ds.size_bytes(), .num_elements = ds.num_elements(), .item_size = ds.item_size()};
}

std::optional<uint64_t> SeekWindowed(SeekKind k, uint64_t off, const Dataset& ds) {
  const fusefs::DefinedRunsFn runs = [&ds](uint64_t first, uint64_t count) { return ds.DefinedRuns(first, count); };
  auto r = fusefs::Seek(k, off, ViewOf(ds), runs);
  if (!r) Die(r.error(), "windowed seek");
  return *r;
}

// SLABFS_BENCH_BASELINE: built against the tree before the walk existed
// (to time the windowed column on the old engine), the walk column is not
// run.
#ifndef SLABFS_BENCH_BASELINE
constexpr bool kHaveWalk = true;
std::optional<uint64_t> SeekWalk(SeekKind k, uint64_t off, const Dataset& ds) {
  const fusefs::DefinedWalkFn walk = [&ds](uint64_t first, uint64_t count, const fusefs::RunVisitor& fn) {
    return ds.ForEachDefinedRun(first, count, fn);
  };
  auto r = fusefs::Seek(k, off, ViewOf(ds), walk);
  if (!r) Die(r.error(), "seek");
  return *r;
}
#else
constexpr bool kHaveWalk = false;
std::optional<uint64_t> SeekWalk(SeekKind, uint64_t, const Dataset&) { return std::nullopt; }
#endif

std::optional<uint64_t> CountOldWay(const Dataset& ds) {
  auto boxes = ds.Defined(Slab::All(ds.info().shape));
  if (!boxes) Die(boxes.error(), "defined");
  uint64_t n = 0;
  for (const Box& b : *boxes) n += Volume(b);
  return n;
}

std::optional<uint64_t> Count(const Dataset& ds) {
  auto n = ds.CountDefined();
  if (!n) Die(n.error(), "count defined");
  return *n;
}

std::string Times(const std::vector<double>& t) {
  if (t.empty()) return "-";
  const bench::Spread s = bench::SpreadOf(t);
  char b[96];
  std::snprintf(b, sizeof b, "%.6f/%.6f/%.6f", s.min, s.median, s.max);
  return b;
}

void Run(const Config& cfg, int* failures) {
  const std::string path = cfg.path + ".holes";
  unlink(path.c_str());
  auto c = Container::Open(path, {.create = true, .cache_bytes = cfg.cache_mb << 20});
  if (!c) Die(c.error(), "create " + path);
  const uint64_t huge = uint64_t{1} << 62;
  Dataset sparse = Make(**c, "/sparse", {.dtype = DType::kU1, .shape = {huge}, .chunks = {kChunk}, .sparse = true});
  Dataset dense = Make(**c, "/dense", {.dtype = DType::kU1, .shape = {huge}, .chunks = {kChunk}});
  Dataset fixed = Make(**c, "/fixed", {.dtype = DType::kU1, .shape = {uint64_t{1} << 38}, .chunks = {1024}});
  const std::vector<uint64_t> marks = {
      0, uint64_t{1} << 36, uint64_t{1} << 40, uint64_t{1} << 50, uint64_t{1} << 61, huge - 1};
  for (uint64_t at : marks) {
    Put(sparse, at);
    Put(dense, at);
  }
  Put(dense, 0, 256 * kChunk);  // 256 MiB of data from 0
  for (uint64_t at : {uint64_t{0}, uint64_t{1} << 37, (uint64_t{1} << 38) - 1}) Put(fixed, at);
  if (Status s = (*c)->Close(); !s.ok()) Die(s, "close");
  c = Container::Open(path, {.read_only = true, .cache_bytes = cfg.cache_mb << 20});
  if (!c) Die(c.error(), "open " + path);
  sparse = *(*c)->OpenDataset("/sparse");
  dense = *(*c)->OpenDataset("/dense");
  fixed = *(*c)->OpenDataset("/fixed");

  std::vector<HoleRow> rows;
  auto seek = [&](std::string what, const Dataset& ds, SeekKind k, uint64_t off, uint64_t expect, uint64_t hole_bytes) {
    HoleRow r;
    r.what = std::move(what);
    r.expect = expect;
    r.hole_bytes = hole_bytes;
    if (hole_bytes <= cfg.max_windowed_bytes) r.windowed = [&ds, k, off] { return SeekWindowed(k, off, ds); };
    if (kHaveWalk) r.walk = [&ds, k, off] { return SeekWalk(k, off, ds); };
    rows.push_back(std::move(r));
  };
  const uint64_t region = fusefs::kSeekRegionBytes;
  for (size_t i = 1; i + 1 < marks.size(); ++i) {
    const uint64_t from = marks[i - 1] + region;
    seek("sparse SEEK_DATA over 2^" + std::to_string(std::countr_zero(marks[i])) + " B", sparse, SeekKind::kData, from,
         marks[i], marks[i] - from);
  }
  seek("sparse SEEK_DATA to the last byte", sparse, SeekKind::kData, marks[4] + region, (huge - 1) / region * region,
       huge - region - marks[4]);
  seek("sparse SEEK_HOLE after data at 0", sparse, SeekKind::kHole, 0, region, 0);
  seek("dense SEEK_HOLE after 256 MiB", dense, SeekKind::kHole, 0, 256 * kChunk, 0);
  seek("dense SEEK_DATA over 2^36 B", dense, SeekKind::kData, 256 * kChunk, marks[1], marks[1] - 256 * kChunk);
  auto count = [&](std::string what, const Dataset& ds, uint64_t expect) {
    HoleRow r;
    r.what = std::move(what);
    r.expect = expect;
    r.windowed = [&ds] { return CountOldWay(ds); };
    if (kHaveWalk) r.walk = [&ds] { return Count(ds); };
    rows.push_back(std::move(r));
  };
  count("sparse CountDefined", sparse, marks.size());
  count("dense CountDefined (261 chunks)", dense, (256 + 5) * kChunk);
  count("fixed-array CountDefined (2^28 chunks, 3 stored)", fixed, 3 * 1024);

  // Interleaved rounds; round 0 warms the index and is not timed.
  for (uint64_t round = 0; round <= cfg.hole_rounds; ++round) {
    for (HoleRow& r : rows) {
      for (int way = 0; way < 2; ++way) {
        // Alternate which way goes first.
        const bool windowed = (way == 0) == (round % 2 == 0);
        const auto& fn = windowed ? r.windowed : r.walk;
        if (!fn) continue;
        const auto t0 = Clock::now();
        const std::optional<uint64_t> got = fn();
        const double t = Seconds(t0, Clock::now());
        if (got != r.expect) {
          std::fprintf(stderr, "bench_sparse: %s (%s) answered %s, expected %lu\n", r.what.c_str(),
                       windowed ? "windowed" : "walk", got ? std::to_string(*got).c_str() : "nothing", r.expect);
          ++*failures;
        }
        if (round > 0) (windowed ? r.t_windowed : r.t_walk).push_back(t);
      }
    }
  }
  // The windowed seek's rate per byte of hole, from its longest run.
  double per_byte = 0;
  for (const HoleRow& r : rows)
    if (!r.t_windowed.empty() && r.hole_bytes > 0)
      per_byte = std::max(per_byte, bench::SpreadOf(r.t_windowed).median / static_cast<double>(r.hole_bytes));
  std::printf(
      "\n## holes: u1 (2^62,) chunks 2^20 (b-tree, 2^42 chunks), bytes defined at 0, 2^36, 2^40, 2^50, "
      "2^61, 2^62-1; dense: the same plus 256 MiB from 0; fixed: (2^38,) chunks 2^10; %lu rounds, seconds "
      "min/median/max\n",
      cfg.hole_rounds);
  std::printf("%-50s %-36s %-36s %12s\n", "call", "windowed (before)", "walk (after)", "median ratio");
  for (const HoleRow& r : rows) {
    std::string before = Times(r.t_windowed), ratio = "-";
    const double after = r.t_walk.empty() ? 0 : bench::SpreadOf(r.t_walk).median;
    if (r.t_walk.empty()) {
      // baseline build: the windowed column alone
    } else if (!r.t_windowed.empty()) {
      char b[32];
      std::snprintf(b, sizeof b, "%.0fx", bench::SpreadOf(r.t_windowed).median / std::max(after, 1e-9));
      ratio = b;
    } else if (per_byte > 0) {
      char b[64];
      const double est = per_byte * static_cast<double>(r.hole_bytes);
      std::snprintf(b, sizeof b, "~%.3g s (not run)", est);
      before = b;
      std::snprintf(b, sizeof b, "~%.2gx", est / std::max(after, 1e-9));
      ratio = b;
    }
    std::printf("%-50s %-36s %-36s %12s\n", r.what.c_str(), before.c_str(), Times(r.t_walk).c_str(), ratio.c_str());
  }
  if (per_byte > 0)
    std::printf("# windowed seek: %.3g s per TiB of hole (median of its longest row); '~' rows extrapolate it\n",
                per_byte * static_cast<double>(uint64_t{1} << 40));
  std::fflush(stdout);
  c->reset();
  if (!cfg.keep) unlink(path.c_str());
}

}  // namespace holes
}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  std::string chunks_text = "1x1024x1024", sparse_text = "none;shuffle,deflate=1",
              dense_text = "shuffle,deflate=6;shuffle,deflate=1", variant = "both";
  bench::Args args(argc, argv, "bench_sparse", Usage);
  while (args.Next()) {
    if (args.Is("--frames"))
      cfg.frames = args.Number();
    else if (args.Is("--size"))
      cfg.size = args.Number();
    else if (args.Is("--chunk"))
      chunks_text = args.Value();
    else if (args.Is("--variant"))
      variant = args.Value();
    else if (args.Is("--sparse-filters"))
      sparse_text = args.Value();
    else if (args.Is("--dense-filters"))
      dense_text = args.Value();
    else if (args.Is("--dense-frames"))
      cfg.dense_frames = args.Number();
    else if (args.Is("--commit-every"))
      cfg.commit_every = args.Number();
    else if (args.Is("--cache-mb"))
      cfg.cache_mb = args.Number();
    else if (args.Is("--path"))
      cfg.path = args.Value();
    else if (args.Is("--keep"))
      cfg.keep = true;
    else if (args.Is("--hole-rounds"))
      cfg.hole_rounds = args.Number();
    else if (args.Is("--max-windowed-bytes"))
      cfg.max_windowed_bytes = args.Number();
    else
      args.Bad();
  }
  for (const std::string& c : bench::SplitList(chunks_text)) cfg.chunks.push_back(ParseChunk(c));
  cfg.sparse_filters = bench::SplitList(sparse_text);
  cfg.dense_filters = bench::SplitList(dense_text);
  if (variant == "a" || variant == "b")
    cfg.variants = variant;
  else if (variant == "holes")
    cfg.variants = "h";
  else if (variant != "both")
    Usage();
  if (cfg.chunks.empty() || cfg.size < 10) Usage();

  bench::PrintMachine("bench_sparse");
  if (cfg.variants == "h") {
    int failures = 0;
    holes::Run(cfg, &failures);
    std::printf("\n# %s\n", failures == 0 ? "every answer checked" : "some answers WRONG");
    return failures == 0 ? 0 : 3;
  }
  std::printf(
      "# %lu frames of %lux%lu u2 appended to (unlimited, %lu, %lu): Resize + Write per frame, a commit "
      "every %lu frames and at the end; cache %lu MiB; containers %s.*\n",
      cfg.frames, cfg.size, cfg.size, cfg.size, cfg.size, cfg.commit_every, cfg.cache_mb, cfg.path.c_str());
  std::printf(
      "# ingest: engine calls only (generation untimed), commits and close included; queries from a fresh "
      "read-only open, file in the page cache; MB = 1e6 bytes\n");
  std::printf(
      "# st/def = stored / defined bytes; target = stored / (defined bytes + 8 x runs), at most 1.25 "
      "(unfiltered sparse); empty = stored chunks with nothing defined\n");
  std::fflush(stdout);
  int failures = 0;
  for (char v : cfg.variants) RunVariant(cfg, v, &failures);
  std::printf("\n# %s\n", failures == 0 ? "all targets PASS" : "some targets FAIL");
  return failures == 0 ? 0 : 3;
}
