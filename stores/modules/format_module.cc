#include "stores/modules/format_module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "stores/modules/build_id.h"

namespace slabfs::stores {
namespace {

using EntryFn = const void* (*)();

struct Loaded {
  Status status;  // why it did not load, when it did not
  void* handle = nullptr;
};

}  // namespace

std::string FormatModuleDir() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return SLABFS_MODULE_DIR_FROM_BIN;  // relative to the working directory: fails clearly below
  return (exe.parent_path() / SLABFS_MODULE_DIR_FROM_BIN).lexically_normal().string();
}

Result<const FormatModuleHeader*> LoadFormatModule(std::string_view name, const char* entry) {
  // One attempt to load per module and process: a module that did not load
  // gives the same answer again without touching the loader.
  static std::mutex mu;
  static std::map<std::string, Loaded, std::less<>> loaded;
  std::lock_guard lock(mu);
  const std::string path = fmt::format("{}/slabfs-{}.so", FormatModuleDir(), name);
  auto refused = [&](std::string why) {
    Status s = Status::NotSupported(fmt::format("slabfs's module {} {}", path, why));
    spdlog::warn("{}", s.message());
    return s;
  };
  auto it = loaded.find(name);
  if (it == loaded.end()) {
    Loaded l;
    if (::access(path.c_str(), R_OK) != 0) {
      l.status = refused(
          fmt::format("cannot be read ({}): reinstall slabfs, or rebuild it with libhdf5-dev", std::strerror(errno)));
    } else if (void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL); handle == nullptr) {
      // RTLD_NOW: every symbol the module takes from this program is
      // resolved here, so a module that does not fit fails now with the
      // loader's reason, not later in a call. RTLD_LOCAL: its names stay
      // its own. It is never unloaded.
      const char* why = ::dlerror();
      l.status = refused(fmt::format("does not load: {}", why != nullptr ? why : "unknown reason"));
    } else {
      l.handle = handle;
    }
    it = loaded.emplace(std::string(name), std::move(l)).first;
  }
  if (!it->second.status.ok()) return Err(it->second.status);
  auto fn = reinterpret_cast<EntryFn>(::dlsym(it->second.handle, entry));
  if (fn == nullptr) return Err(refused(fmt::format("has no entry {}", entry)));
  const auto* table = static_cast<const FormatModuleHeader*>(fn());
  if (table == nullptr || table->build_id == nullptr) {
    return Err(refused(fmt::format("gives no table from {}", entry)));
  }
  if (std::strcmp(table->build_id, SLABFS_BUILD_ID) != 0) {
    return Err(refused(fmt::format("is from another build of slabfs ({}; this program is {}): reinstall slabfs",
                                   table->build_id, SLABFS_BUILD_ID)));
  }
  return table;
}

}  // namespace slabfs::stores
