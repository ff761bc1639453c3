#include "tests/testutil/mem_container.h"

#include "engine/api_access.h"

namespace slabfs::testutil {

std::shared_ptr<Disk> NewDisk() {
  auto disk = std::make_shared<Disk>();
  FaultFile f(disk);
  Status s = engine::ContainerImpl::Format(&f);
  if (s.ok()) s = f.Sync();
  if (!s.ok()) return nullptr;
  return disk;
}

Result<std::unique_ptr<Container>> OpenOnDisk(const std::shared_ptr<Disk>& disk, OpenOptions o) {
  auto impl = engine::ContainerImpl::Open(std::make_unique<FaultFile>(disk), o);
  if (!impl) return Err(impl.error());
  return engine::ApiAccess::Wrap(std::move(*impl));
}

std::string Pattern(size_t n, uint32_t salt) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + salt * 7) >> 3);
  return s;
}

uint64_t DiskSize(const std::shared_ptr<Disk>& disk) {
  std::lock_guard lock(disk->mu);
  return disk->current.size();
}

void SetCapacity(const std::shared_ptr<Disk>& disk, uint64_t cap) {
  std::lock_guard lock(disk->mu);
  disk->capacity = cap;
}

}  // namespace slabfs::testutil
