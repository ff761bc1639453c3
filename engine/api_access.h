// The engine's way into the public Container (include/slabfs/container.h),
// which names nothing of the engine: a Container over a ContainerImpl opened
// on a file of the caller's choosing (the tests' fake files, the fuzzer's
// file in memory), and the ContainerImpl behind a Container, for tests that
// look at the engine's state (the allocator's extents).
#ifndef SLABFS_ENGINE_API_ACCESS_H_
#define SLABFS_ENGINE_API_ACCESS_H_

#include <memory>

#include "slabfs/container.h"

namespace slabfs::engine {

class ContainerImpl;

class ApiAccess {
 public:
  // Takes ownership: closing or destroying the Container closes `impl`.
  static std::unique_ptr<Container> Wrap(std::unique_ptr<ContainerImpl> impl);
  // Valid while `c` is.
  static ContainerImpl& Impl(const Container& c);
};

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_API_ACCESS_H_
