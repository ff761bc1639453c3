#include "engine/util/expensive_checks.h"

#include <cstdlib>
#include <cstring>

namespace slabfs::engine::expensive_checks {

bool FromEnvironment() {
  const char* value = std::getenv("SLABFS_EXPENSIVE_CHECKS");
  return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0;
}

}  // namespace slabfs::engine::expensive_checks
