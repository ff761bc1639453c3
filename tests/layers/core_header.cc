// Compiled by the layers.* tests (tests/CMakeLists.txt) against a layer's
// include tree: the code above the layers (engine/*.h) is not in any, so no
// layer can include it.
#include "engine/container_impl.h"
