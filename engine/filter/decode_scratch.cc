#include "engine/filter/decode_scratch.h"

#include <memory>

namespace slabfs::engine {
namespace {

struct Scratch {
  std::unique_ptr<char[]> p;
  size_t size = 0;
};

Scratch* Buffers() {
  thread_local Scratch buffers[2];
  return buffers;
}

}  // namespace

char* DecodeScratch(int k, size_t n) {
  Scratch& b = Buffers()[k & 1];
  if (b.size < n) {
    b.p.reset();  // the old one goes first: at most one large buffer at a time
    b.p.reset(new char[n]);
    b.size = n;
  }
  return b.p.get();
}

TrimDecodeScratch::~TrimDecodeScratch() {
  for (int k = 0; k < 2; ++k) {
    Scratch& b = Buffers()[k];
    if (b.size > kKeepDecodeScratchBytes) {
      b.p.reset();
      b.size = 0;
    }
  }
}

size_t DecodeScratchBytes() { return Buffers()[0].size + Buffers()[1].size; }

}  // namespace slabfs::engine
