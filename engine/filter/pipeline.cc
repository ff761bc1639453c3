#include "engine/filter/pipeline.h"

#include <libdeflate.h>

#include <charconv>
#include <cstring>

#include "engine/filter/decode_scratch.h"
#include "engine/filter/deflate_pool.h"
#include "engine/filter/shuffle.h"
#include "engine/util/coding.h"
#include "engine/util/crc32c.h"

namespace slabfs::engine {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<FilterPipeline> FilterPipeline::Make(std::vector<Filter> filters) {
  if (filters.size() > kMaxFilters)
    return Err(Status::InvalidArgument("at most " + std::to_string(kMaxFilters) + " filters"));
  bool seen[4] = {};
  for (const Filter& f : filters) {
    const auto id = static_cast<uint8_t>(f.id);
    if (id < 1 || id > 3) return Err(Status::InvalidArgument("unknown filter " + std::to_string(id)));
    if (seen[id]) return Err(Status::InvalidArgument("a filter appears twice in the pipeline"));
    seen[id] = true;
    if (f.id == FilterId::kDeflate && (f.level < 1 || f.level > 9))
      return Err(Status::InvalidArgument("deflate level " + std::to_string(f.level) + " is not 1 to 9"));
    if (f.id != FilterId::kDeflate && f.level != 0) return Err(Status::InvalidArgument("only deflate takes a level"));
  }
  FilterPipeline p;
  p.filters_ = std::move(filters);
  return p;
}

Result<FilterPipeline> FilterPipeline::Parse(std::string_view text) {
  text = Trim(text);
  std::vector<Filter> filters;
  if (text.empty() || text == "none") return Make(filters);
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string_view item = Trim(text.substr(pos, comma == std::string_view::npos ? text.npos : comma - pos));
    if (item == "shuffle") {
      filters.push_back({FilterId::kShuffle, 0});
    } else if (item == "checksum") {
      filters.push_back({FilterId::kChecksum, 0});
    } else if (item.starts_with("deflate")) {
      std::string_view rest = item.substr(7);
      unsigned level = 6;
      if (!rest.empty()) {
        if (rest.front() != '=' && rest.front() != ':')
          return Err(Status::InvalidArgument("bad filter '" + std::string(item) + "'"));
        rest.remove_prefix(1);
        auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), level);
        if (ec != std::errc() || p != rest.data() + rest.size() || level < 1 || level > 9)
          return Err(Status::InvalidArgument("deflate level '" + std::string(rest) + "' is not 1 to 9"));
      }
      filters.push_back({FilterId::kDeflate, static_cast<uint8_t>(level)});
    } else {
      return Err(
          Status::InvalidArgument("unknown filter '" + std::string(item) + "' (shuffle, deflate=1..9, checksum)"));
    }
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return Make(std::move(filters));
}

bool FilterPipeline::compresses() const {
  for (const Filter& f : filters_) {
    if (f.id == FilterId::kDeflate) return true;
  }
  return false;
}

uint64_t FilterPipeline::MaxEncodedBytes(uint64_t n) const {
  // Deflate is skipped where it does not make the chunk smaller.
  for (const Filter& f : filters_)
    if (f.id == FilterId::kChecksum) n += 4;
  return n;
}

std::string FilterPipeline::ToString() const {
  if (filters_.empty()) return "none";
  std::string s;
  for (const Filter& f : filters_) {
    if (!s.empty()) s += ',';
    switch (f.id) {
      case FilterId::kShuffle: s += "shuffle"; break;
      case FilterId::kDeflate: s += "deflate=" + std::to_string(f.level); break;
      case FilterId::kChecksum: s += "checksum"; break;
    }
  }
  return s;
}

void FilterPipeline::Encode(const char* data, size_t n, size_t item_size, std::string* out, uint32_t* mask) const {
  std::string cur(data, n), next;
  *mask = 0;
  for (size_t i = 0; i < filters_.size(); ++i) {
    const Filter& f = filters_[i];
    switch (f.id) {
      case FilterId::kShuffle:
        if (item_size > 1) {
          next.resize(cur.size());
          ShuffleBytes(cur.data(), cur.size(), item_size, next.data());
          cur.swap(next);
        }
        break;
      case FilterId::kDeflate: {
        // Room for one byte less than the input: a stream that does not fit
        // would not make the chunk smaller, and deflate is skipped.
        libdeflate_compressor* z = ThreadCompressor(f.level);
        size_t len = 0;
        if (z && cur.size() > 1) {
          next.resize(cur.size() - 1);
          len = libdeflate_zlib_compress(z, cur.data(), cur.size(), next.data(), next.size());
        }
        if (len > 0) {
          next.resize(len);
          cur.swap(next);
        } else {
          *mask |= 1u << i;  // stored as it was: deflate did not help
        }
        break;
      }
      case FilterId::kChecksum: PutU32(&cur, Crc32c(cur.data(), cur.size())); break;
    }
  }
  out->swap(cur);
}

Status FilterPipeline::Decode(std::string_view stored, uint32_t mask, size_t item_size, char* out, size_t expected,
                              std::string_view what) const {
  auto bad = [&](std::string_view why) {
    return Status::Corruption(what.empty() ? std::string(why) : std::string(what) + ": " + std::string(why));
  };
  uint32_t skippable = 0;
  for (size_t i = 0; i < filters_.size(); ++i)
    if (filters_[i].id == FilterId::kDeflate) skippable |= 1u << i;
  if ((mask & ~skippable) != 0) return bad("the filter mask names filters that cannot be skipped");
  // The size of the input of each filter when the chunk was encoded, as far
  // as it is known without the data: exact up to the deflate filter (only
  // shuffle and checksum can come before it), which is where it is needed.
  std::vector<size_t> size_in(filters_.size());
  size_t s = expected;
  for (size_t i = 0; i < filters_.size(); ++i) {
    size_in[i] = s;
    if (filters_[i].id == FilterId::kChecksum) s += 4;
  }
  // Each step that transforms the bytes writes into the caller's buffer if
  // it is the last such step and its result is exactly the chunk (no
  // checksum left to strip), else into a scratch buffer.
  auto transforms = [&](size_t i) {
    if (mask >> i & 1) return false;
    return filters_[i].id == FilterId::kDeflate || (filters_[i].id == FilterId::kShuffle && item_size > 1);
  };
  DecodeDestinations dest(out, expected, LastTransformingStep(filters_.size(), transforms));
  std::string_view cur = stored;
  for (size_t i = filters_.size(); i-- > 0;) {
    if (mask >> i & 1) continue;
    switch (filters_[i].id) {
      case FilterId::kChecksum: {
        if (cur.size() < 4) return bad("stored chunk too short for its checksum");
        const size_t body = cur.size() - 4;
        if (!ChecksumMatches(LoadU32(cur.data() + body), Crc32c(cur.data(), body))) return bad("checksum mismatch");
        cur = cur.substr(0, body);
        break;
      }
      case FilterId::kDeflate: {
        // Inflate into exactly the size the stream must produce, never more;
        // the stream must also end exactly where the stored bytes do.
        const size_t n = size_in[i];
        libdeflate_decompressor* z = ThreadDecompressor();
        if (!z) return Status::IOError(std::string(what) + ": no memory to inflate");
        char* dst = dest(i, n);
        size_t used_in = 0, made = 0;
        const libdeflate_result rc = libdeflate_zlib_decompress_ex(z, cur.data(), cur.size(), dst, n, &used_in, &made);
        if (rc != LIBDEFLATE_SUCCESS || made != n || used_in != cur.size())
          return bad("deflate stream is damaged or does not decode to the chunk's size");
        cur = std::string_view(dst, n);
        break;
      }
      case FilterId::kShuffle:
        // Any size unshuffles; the final size check catches a wrong one.
        cur = dest.Unshuffle(i, cur, item_size);
        break;
    }
  }
  if (cur.size() != expected)
    return bad("stored chunk decodes to " + std::to_string(cur.size()) + " bytes, not " + std::to_string(expected));
  dest.Finish(cur);
  return Status::OK();
}

}  // namespace slabfs::engine
