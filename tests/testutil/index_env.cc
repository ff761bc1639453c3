#include "tests/testutil/index_env.h"

#include <gtest/gtest.h>

namespace slabfs::testutil {

uint64_t LiveBytesAfter(engine::Allocator& alloc, uint64_t data_end) {
  uint64_t unreferenced = 0;
  for (const engine::FreedExtent& e : alloc.Unreferenced())
    if (e.addr >= data_end) unreferenced += e.len;
  return alloc.file_end() - data_end - unreferenced;
}

WriteStats TakeWrites(Disk& disk, engine::File& file) {
  WriteStats w{static_cast<int64_t>(disk.unsynced.size()), 0};
  for (const auto& u : disk.unsynced) w.bytes += u.data.size();
  Status s = file.Sync();  // clears the list
  EXPECT_TRUE(s.ok()) << s.ToString();
  return w;
}

}  // namespace slabfs::testutil
