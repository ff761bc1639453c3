// libslabfs.so is the engine archive (slabfs_engine) linked whole into one
// shared object: this file only gives the target a source (cmake/install.cmake).
