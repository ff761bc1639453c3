// The metadata decoders on their own: the first byte picks one, the rest is
// its input. Superblock, block envelope, group (inline, paged and with page
// tables), group page, group page table and dataset object payloads, free list and free-list delta (applied
// to an empty set, as a reader replays a chain).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/format/block.h"
#include "engine/format/free_list.h"
#include "engine/format/object.h"
#include "engine/format/superblock.h"

using namespace slabfs::engine;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  // A file end that lets most references pass, so decoding goes on past them.
  constexpr uint64_t kFileEnd = uint64_t{1} << 40;
  switch (data[0] % 11) {
    case 0: (void)DecodeSuperblock(in); break;
    case 1: (void)DecodeBlock(in, BlockType::kGroup, "fuzz"); break;
    case 2: (void)DecodeObject(in, BlockType::kGroup, kFileEnd); break;
    case 3: (void)DecodeObject(in, BlockType::kDataset, kFileEnd, 2); break;
    case 4: (void)DecodeFreeList(in, kFileEnd); break;
    case 6: (void)DecodeObject(in, BlockType::kGroup, kFileEnd, 2); break;
    case 7: {
      const std::string next = "m";
      (void)DecodeGroupPage(in, 9, ChildPageRef{"", {}, 3}, &next, kFileEnd);
      break;
    }
    case 9: (void)DecodeObject(in, BlockType::kGroup, kFileEnd, 3); break;
    case 10: {
      const std::string next = "m";
      (void)DecodeGroupPageTable(in, 9, ChildPageRef{"", {}, 3}, &next, kFileEnd);
      break;
    }
    case 8: {
      auto d = DecodeFreeListDelta(in, kFileEnd, 100);
      if (d) {
        FreeExtentSet set({});
        for (const FreeListChange& c : d->changes)
          if (!set.Apply(c).ok()) break;
        (void)set.CheckBounds(kFileEnd);
        (void)set.Extents();
      }
      break;
    }
    case 5: {
      // A block and then the object inside it, as a reader does.
      uint8_t version = 1;
      auto payload = DecodeBlock(in, BlockType::kDataset, "fuzz", &version);
      if (payload) (void)DecodeObject(*payload, BlockType::kDataset, in.size(), version);
      break;
    }
  }
  return 0;
}
