#include "stores/hdf5/hdf5_pipeline.h"

#include <libdeflate.h>

#include <cstring>

#include "engine/filter/decode_scratch.h"
#include "engine/filter/deflate_pool.h"
#include "engine/filter/fletcher32.h"
#include "engine/filter/shuffle.h"
#include "engine/util/coding.h"

namespace slabfs::stores {

Result<Hdf5Pipeline> Hdf5Pipeline::Make(std::vector<Hdf5Filter> filters) {
  if (filters.size() > kMaxFilters) return Err(Status::InvalidArgument("more than 32 filters"));
  int deflates = 0;
  for (const Hdf5Filter& f : filters) {
    if (f.kind == Hdf5Filter::Kind::kDeflate) ++deflates;
    if (f.kind == Hdf5Filter::Kind::kShuffle && f.shuffle_item == 0)
      return Err(Status::InvalidArgument("shuffle by an element size of 0"));
  }
  if (deflates > 1) return Err(Status::InvalidArgument("deflate applied twice"));
  Hdf5Pipeline p;
  p.filters_ = std::move(filters);
  return p;
}

bool Hdf5Pipeline::compresses() const {
  for (const Hdf5Filter& f : filters_)
    if (f.kind == Hdf5Filter::Kind::kDeflate) return true;
  return false;
}

std::string Hdf5Pipeline::ToString() const {
  std::string s;
  for (const Hdf5Filter& f : filters_) {
    if (!s.empty()) s += ',';
    switch (f.kind) {
      case Hdf5Filter::Kind::kDeflate: s += "deflate=" + std::to_string(f.level); break;
      case Hdf5Filter::Kind::kShuffle: s += "shuffle"; break;
      case Hdf5Filter::Kind::kFletcher32: s += "fletcher32"; break;
    }
  }
  return s;
}

std::string Hdf5Pipeline::SlabFilters() const {
  std::string s;
  auto add = [&](const std::string& f) { s += (s.empty() ? "" : ",") + f; };
  for (const Hdf5Filter& f : filters_) {
    switch (f.kind) {
      case Hdf5Filter::Kind::kDeflate:
        if (f.level > 0) add("deflate=" + std::to_string(f.level > 9 ? 9 : f.level));
        break;
      case Hdf5Filter::Kind::kShuffle: add("shuffle"); break;
      case Hdf5Filter::Kind::kFletcher32: add("checksum"); break;
    }
  }
  return s;
}

bool Hdf5Pipeline::AllSkipped(uint32_t mask) const {
  for (size_t i = 0; i < filters_.size(); ++i)
    if ((mask >> i & 1) == 0) return false;
  return true;
}

uint64_t Hdf5Pipeline::MaxStoredBytes(uint64_t n) const {
  // Stored deflate blocks add 5 bytes per 64 KiB; zlib's header and
  // trailer 6; each checksum 4. Twice the chunk and 64 KiB is generous.
  return compresses() ? 2 * n + (64 << 10) : n + 4 * filters_.size();
}

Status Hdf5Pipeline::Decode(std::string_view stored, uint32_t mask, char* out, size_t expected,
                            std::string_view what) const {
  auto bad = [&](std::string_view why) { return Status::Corruption(std::string(what) + ": " + std::string(why)); };
  const size_t n = filters_.size();
  // The size each filter was given when the chunk was written: known up to
  // and including the deflate filter (only shuffle and checksums, whose
  // sizes are known, come before it), which is where it is needed.
  std::vector<size_t> size_in(n);
  size_t s = expected;
  for (size_t i = 0; i < n; ++i) {
    size_in[i] = s;
    if ((mask >> i & 1) == 0 && filters_[i].kind == Hdf5Filter::Kind::kFletcher32) s += 4;
  }
  auto transforms = [&](size_t i) {
    if (mask >> i & 1) return false;
    return filters_[i].kind == Hdf5Filter::Kind::kDeflate ||
           (filters_[i].kind == Hdf5Filter::Kind::kShuffle && filters_[i].shuffle_item > 1);
  };
  // The first filter that transforms is the last step of decoding: it
  // writes straight into `out` when it yields the chunk's size.
  engine::DecodeDestinations dest(out, expected, engine::LastTransformingStep(n, transforms));
  std::string_view cur = stored;
  for (size_t i = n; i-- > 0;) {
    if (mask >> i & 1) continue;
    const Hdf5Filter& f = filters_[i];
    switch (f.kind) {
      case Hdf5Filter::Kind::kFletcher32: {
        if (cur.size() < 4) return bad("stored chunk too short for its Fletcher-32 checksum");
        const size_t body = cur.size() - 4;
        if (engine::Fletcher32(cur.data(), body) != engine::LoadU32(cur.data() + body))
          return bad("Fletcher-32 checksum mismatch");
        cur = cur.substr(0, body);
        break;
      }
      case Hdf5Filter::Kind::kDeflate: {
        const size_t want = size_in[i];
        libdeflate_decompressor* z = engine::ThreadDecompressor();
        if (z == nullptr) return Status::IOError(std::string(what) + ": no memory to inflate");
        char* dst = dest(i, want);
        size_t used_in = 0, made = 0;
        const libdeflate_result rc =
            libdeflate_zlib_decompress_ex(z, cur.data(), cur.size(), dst, want, &used_in, &made);
        if (rc != LIBDEFLATE_SUCCESS || made != want || used_in != cur.size())
          return bad("deflate stream is damaged or does not inflate to the chunk's size");
        cur = std::string_view(dst, want);
        break;
      }
      case Hdf5Filter::Kind::kShuffle: cur = dest.Unshuffle(i, cur, f.shuffle_item); break;
    }
  }
  if (cur.size() != expected)
    return bad("stored chunk decodes to " + std::to_string(cur.size()) + " bytes, not " + std::to_string(expected));
  dest.Finish(cur);
  return Status::OK();
}

}  // namespace slabfs::stores
