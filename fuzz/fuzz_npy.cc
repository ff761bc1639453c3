// The .npy header parser (slab import, the mount's .npy views).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "slabfs/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  (void)slabfs::HasNpyMagic(in);
  (void)slabfs::NpyHeaderLength(in);
  (void)slabfs::ParseNpyHeader(in);
  return 0;
}
