// Measurements shared by the chunk-index tests, which run an index over an
// Allocator and a BlockStore on a FaultFile.
#ifndef SLABFS_TESTS_TESTUTIL_INDEX_ENV_H_
#define SLABFS_TESTS_TESTUTIL_INDEX_ENV_H_

#include <cstdint>

#include "engine/io/file.h"
#include "engine/space/allocator.h"
#include "tests/testutil/fault_file.h"

namespace slabfs::testutil {

// Bytes in use past data_end from the allocator's point of view (everything
// there that is neither free nor pending): the index blocks, when the test
// put its chunk data below data_end.
uint64_t LiveBytesAfter(engine::Allocator& alloc, uint64_t data_end);

struct WriteStats {
  int64_t writes;
  uint64_t bytes;
};
// The writes made to the disk since its last sync; syncs `file` (on the
// same disk), which starts the count afresh.
WriteStats TakeWrites(Disk& disk, engine::File& file);

}  // namespace slabfs::testutil

#endif  // SLABFS_TESTS_TESTUTIL_INDEX_ENV_H_
