// libslabfs.so is the engine's archives (slabfs_engine and one per layer)
// linked whole into one shared object: this file only gives the target a
// source (cmake/install.cmake).
