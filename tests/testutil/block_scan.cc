#include "tests/testutil/block_scan.h"

#include "engine/format/layout.h"
#include "engine/util/coding.h"

namespace slabfs::testutil {

std::map<engine::BlockType, int> CountBlocksByType(std::string_view image) {
  std::map<engine::BlockType, int> counts;
  for (size_t at = engine::kDataStart; at + engine::kBlockHeaderBytes <= image.size(); ++at) {
    if (engine::LoadU32(image.data() + at) != engine::kBlockMagic) continue;
    const size_t len = engine::kBlockHeaderBytes + engine::LoadU32(image.data() + at + 8);
    if (len > image.size() - at) continue;
    const auto type = static_cast<engine::BlockType>(static_cast<uint8_t>(image[at + 4]));
    if (engine::DecodeBlock(image.substr(at, len), type, "scan").has_value()) ++counts[type];
  }
  return counts;
}

}  // namespace slabfs::testutil
