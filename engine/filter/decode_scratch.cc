#include "engine/filter/decode_scratch.h"

#include <cassert>
#include <cstring>
#include <memory>

#include "engine/filter/shuffle.h"

namespace slabfs::engine {
namespace {

struct Scratch {
  std::unique_ptr<char[]> p;
  size_t size = 0;
};

Scratch* Buffers() {
  thread_local Scratch buffers[kDecodeScratchSlots];
  return buffers;
}

}  // namespace

char* DecodeScratch(int k, size_t n) {
  assert(k >= 0 && k < kDecodeScratchSlots);
  Scratch& b = Buffers()[k];
  if (b.size < n || (b.size > kKeepDecodeScratchBytes && n < b.size / 4)) {
    b.p.reset();  // the old one goes first: at most one large buffer at a time
    b.p.reset(new char[n]);
    b.size = n;
  }
  return b.p.get();
}

TrimDecodeScratch::~TrimDecodeScratch() {
  for (int k : {kScratchStepA, kScratchStepB}) {
    Scratch& b = Buffers()[k];
    if (b.size > kKeepDecodeScratchBytes) {
      b.p.reset();
      b.size = 0;
    }
  }
}

size_t DecodeScratchBytes() {
  size_t total = 0;
  for (int k = 0; k < kDecodeScratchSlots; ++k) total += Buffers()[k].size;
  return total;
}

std::string_view DecodeDestinations::Unshuffle(size_t step, std::string_view in, size_t item) {
  if (item <= 1 || in.empty()) return in;
  char* dst = (*this)(step, in.size());
  UnshuffleBytes(in.data(), in.size(), item, dst);
  return {dst, in.size()};
}

void DecodeDestinations::Finish(std::string_view result) const {
  if (!result.empty() && result.data() != out_) std::memcpy(out_, result.data(), result.size());
}

}  // namespace slabfs::engine
