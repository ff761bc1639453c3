// A format module for format_module_test.cc: slabfs-test-module.so, built
// into the module directory beside the real ones (never installed). Its
// entries answer as a module of this build, of another build, or not at all.
#include "stores/modules/format_module.h"

#include "stores/modules/build_id.h"

extern "C" __attribute__((visibility("default"))) const void* slabfs_test_other_build() {
  static const slabfs::stores::FormatModuleHeader kHeader{"0.0.0-another-build"};
  return &kHeader;
}

extern "C" __attribute__((visibility("default"))) const void* slabfs_test_no_table() { return nullptr; }

extern "C" __attribute__((visibility("default"))) const void* slabfs_test_this_build() {
  static const slabfs::stores::FormatModuleHeader kHeader{SLABFS_BUILD_ID};
  return &kHeader;
}
