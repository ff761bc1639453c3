// slab fsck's checker on a hostile container image: it reads everything,
// including what a reader never touches (every index block, the free list),
// and must answer a report whatever the bytes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/fsck/check_file.h"
#include "fuzz/mem_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = std::make_unique<slabfs::fuzz::MemFile>(std::string(reinterpret_cast<const char*>(data), size));
  (void)slabfs::engine::CheckFile(std::move(file), {});
  return 0;
}
