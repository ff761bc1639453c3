// Compiled by the layers.* tests (tests/CMakeLists.txt) against one layer's
// include tree: a layer that uses format finds this header, one that does
// not (util) gets "No such file or directory".
#include "engine/format/layout.h"

static_assert(slabfs::engine::kDataStart > 0);
