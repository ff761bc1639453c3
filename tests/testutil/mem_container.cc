#include "tests/testutil/mem_container.h"

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
  return std::make_unique<Container>(std::move(*impl));
}

}  // namespace slabfs::testutil
