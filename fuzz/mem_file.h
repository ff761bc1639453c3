// A read-only container image in memory, for the fuzz targets.
#ifndef SLABFS_FUZZ_MEM_FILE_H_
#define SLABFS_FUZZ_MEM_FILE_H_

#include <cstring>
#include <string>

#include "engine/io/file.h"

namespace slabfs::fuzz {

class MemFile final : public engine::File {
 public:
  explicit MemFile(std::string image) : image_(std::move(image)) {}

  Status ReadAt(uint64_t off, void* buf, size_t n) override {
    if (off > image_.size() || image_.size() - off < n) return Status::IOError("read past the end");
    std::memcpy(buf, image_.data() + off, n);
    return Status::OK();
  }
  Status WriteAt(uint64_t, const void*, size_t) override { return Status::ReadOnly("fuzz image"); }
  Status Sync() override { return Status::OK(); }
  Result<uint64_t> Size() override { return image_.size(); }
  Status Truncate(uint64_t) override { return Status::ReadOnly("fuzz image"); }
  const std::string& name() const override { return name_; }

 private:
  std::string image_;
  std::string name_ = "fuzz.slab";
};

}  // namespace slabfs::fuzz

#endif  // SLABFS_FUZZ_MEM_FILE_H_
