// Format modules: code whose library is costly to load, in a shared object
// that a program loads the first time a file needs it.
//
// Debian's libhdf5 brings about 30 shared libraries with it (libcurl and
// its TLS, Kerberos and LDAP stack), and loading them cost every process
// that linked it 13-16 ms of CPU on a 2-core VM, three times what `slab`
// costs without them, whatever the command (perf stat: `slab --help`
// 22.6 -> 6.9 ms). So the HDF5 store and the HDF5
// export are modules (stores/hdf5/hdf5_store_module.h,
// tools/convert/hdf5_export_module.h): `slab` and `slabfs` load
// slabfs-hdf5.so or slabfs-hdf5-export.so from their module directory when
// a command or a mount opens an HDF5 or netCDF-4 file, and never otherwise.
// The Python module, the tests and the benchmarks link the same code in
// instead (each module's *_linked.cc); which way a program takes is chosen
// by what it links, so the build refuses a program with neither.
//
// A module is built by the same build as the programs that load it and
// takes the engine from them: the programs export their symbols
// (ENABLE_EXPORTS) and link the engine's archives whole, so that the module
// (which links only libhdf5 and the shared libraries it needs itself) finds
// one engine, one thread pool and one logger. Its entry function returns a
// table that starts with a FormatModuleHeader; a module from another build
// (a partial upgrade) is refused by its build id, never called.
#ifndef SLABFS_STORES_MODULES_FORMAT_MODULE_H_
#define SLABFS_STORES_MODULES_FORMAT_MODULE_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>

#include "slabfs/status.h"

namespace slabfs::stores {

// The first member of every module's entry table.
struct FormatModuleHeader {
  const char* build_id;  // the build's SLABFS_BUILD_ID (stores/modules/build_id.h.in)
};

// This program's module directory: SLABFS_MODULE_DIR_FROM_BIN ("../lib/slabfs")
// from the directory of the running executable, both in the build tree
// (build/bin, build/lib/slabfs) and installed (PREFIX/bin, PREFIX/lib/slabfs).
std::string FormatModuleDir();

// Loads `<FormatModuleDir()>/slabfs-<name>.so` (once per process; it stays
// loaded) and returns the table its extern "C" function `entry` returns,
// after checking the table's header against this build. NotSupported, naming
// the file and the reason, when it is missing, is cut short (checked before
// the loader maps it: a truncated file would kill the loader with SIGBUS),
// does not load, lacks the entry or comes from another build.
Result<const FormatModuleHeader*> LoadFormatModule(std::string_view name, const char* entry);

// LoadFormatModule for a module whose entry table is `Table`, which must
// start with its FormatModuleHeader `header` (checked here, at compile time).
template <class Table>
Result<const Table*> LoadFormatModuleTable(std::string_view name, const char* entry) {
  static_assert(std::is_standard_layout_v<Table> && offsetof(Table, header) == 0,
                "a module's entry table starts with its FormatModuleHeader");
  SLABFS_ASSIGN_OR_RETURN(const FormatModuleHeader* header, LoadFormatModule(name, entry));
  return reinterpret_cast<const Table*>(header);
}

}  // namespace slabfs::stores

#endif  // SLABFS_STORES_MODULES_FORMAT_MODULE_H_
