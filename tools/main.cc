// slab: the slabfs command-line tool. Everything is in tools/slab_app.cc.
#include <cstdio>
#include <cstdlib>

#include "tools/session.h"
#include "tools/slab_app.h"

int main(int argc, char** argv) {
  int code = slabfs::tools::RunSlab(argc, argv);
  if (slabfs::tools::AbandonedWriteSession()) {
    // A failed writing command must not commit what it did; a normal exit
    // could (see tools/session.h).
    std::fflush(nullptr);
    std::_Exit(code);
  }
  return code;
}
