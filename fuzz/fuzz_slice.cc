// The numpy-style slice parser (slab erase/defined, the mount's ds[...]
// views): the first bytes give a shape, the rest is the slice text.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "slabfs/slice.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t rank = 1 + data[0] % 4;
  if (size < 1 + 2 * rank) return 0;
  slabfs::Dims shape;
  for (size_t d = 0; d < rank; ++d) shape.push_back(data[1 + 2 * d] | (data[2 + 2 * d] << 8));
  std::string_view text(reinterpret_cast<const char*>(data) + 1 + 2 * rank, size - 1 - 2 * rank);
  (void)slabfs::ParseSliceItems(text);
  auto slab = slabfs::ParseSlice(text, shape);
  if (slab && slab->num_elements() > 0) (void)slabfs::FormatSlice(*slab);
  return 0;
}
