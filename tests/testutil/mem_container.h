// Containers on in-memory disks, for engine tests.
#ifndef SLABFS_TESTS_TESTUTIL_MEM_CONTAINER_H_
#define SLABFS_TESTS_TESTUTIL_MEM_CONTAINER_H_

#include <memory>
#include <string>

#include "engine/container_impl.h"
#include "slabfs/container.h"
#include "tests/testutil/fault_file.h"

namespace slabfs::testutil {

// A freshly formatted, empty container image.
std::shared_ptr<Disk> NewDisk();
// Opens a container on the disk (which must hold a container image).
Result<std::unique_ptr<Container>> OpenOnDisk(const std::shared_ptr<Disk>& disk, OpenOptions o = {});

// n bytes of a pattern that depends on salt (and compresses somewhat).
std::string Pattern(size_t n, uint32_t salt);
// The disk's current size, and a capacity past which writes fail (NoSpace).
uint64_t DiskSize(const std::shared_ptr<Disk>& disk);
void SetCapacity(const std::shared_ptr<Disk>& disk, uint64_t cap);

}  // namespace slabfs::testutil

#endif  // SLABFS_TESTS_TESTUTIL_MEM_CONTAINER_H_
