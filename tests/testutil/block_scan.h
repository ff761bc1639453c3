// Which metadata blocks a container file holds, found by their headers: a
// test's way to see the block layouts in a file without the engine.
#ifndef SLABFS_TESTS_TESTUTIL_BLOCK_SCAN_H_
#define SLABFS_TESTS_TESTUTIL_BLOCK_SCAN_H_

#include <map>
#include <string_view>

#include "engine/format/block.h"

namespace slabfs::testutil {

// Every offset from kDataStart on where a whole block with a valid header
// and checksum starts, counted by type. Free space that still holds an
// intact block counts too: ask of files without any (slab repack's output)
// what a scan cannot tell apart.
std::map<engine::BlockType, int> CountBlocksByType(std::string_view image);

}  // namespace slabfs::testutil

#endif  // SLABFS_TESTS_TESTUTIL_BLOCK_SCAN_H_
