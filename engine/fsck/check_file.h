// slab fsck's checker on any engine::File (the fuzzers hand it memory).
#ifndef SLABFS_ENGINE_FSCK_CHECK_FILE_H_
#define SLABFS_ENGINE_FSCK_CHECK_FILE_H_

#include <memory>

#include "engine/io/file.h"
#include "slabfs/fsck.h"

namespace slabfs::engine {

// CheckContainer on an open file.
Result<FsckReport> CheckFile(std::unique_ptr<File> file, const FsckOptions& options);

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_FSCK_CHECK_FILE_H_
