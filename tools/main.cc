// slab: the slabfs command-line tool. Everything is in tools/slab_app.cc.
#include "tools/slab_app.h"

int main(int argc, char** argv) { return slabfs::tools::RunSlab(argc, argv); }
