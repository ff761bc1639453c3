#include "stores/modules/format_module.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <vector>

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

// What the loader would map of `path`, checked against the file's size
// before dlopen sees it: a truncated module (a copy cut short, a full disk
// during an install) would otherwise be mapped past its end, and the
// loader would die of SIGBUS touching it. Empty when the file may be
// handed to dlopen (which still refuses a bad header with its reason).
std::string TruncatedElf(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fmt::format("cannot be opened ({})", std::strerror(errno));
  struct stat st {};
  std::string why;
  Elf64_Ehdr eh{};
  if (::fstat(fd, &st) != 0) {
    why = fmt::format("cannot be examined ({})", std::strerror(errno));
  } else if (::pread(fd, &eh, sizeof eh, 0) != static_cast<ssize_t>(sizeof eh) ||
             std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) {
    why = "is not a 64-bit ELF shared object";
  } else {
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    const uint64_t ph_bytes = uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr);
    std::vector<Elf64_Phdr> ph(eh.e_phnum);
    if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff > size || ph_bytes > size - eh.e_phoff ||
        ::pread(fd, ph.data(), ph_bytes, static_cast<off_t>(eh.e_phoff)) != static_cast<ssize_t>(ph_bytes)) {
      why = fmt::format("is cut short: its program headers lie past its end ({} bytes)", size);
    } else {
      for (const Elf64_Phdr& p : ph) {
        if (p.p_type != PT_LOAD && p.p_type != PT_DYNAMIC) continue;
        if (p.p_offset > size || p.p_filesz > size - p.p_offset) {
          why = fmt::format("is cut short: a segment ends at byte {} of {}", p.p_offset + p.p_filesz, size);
          break;
        }
      }
    }
  }
  ::close(fd);
  return why;
}

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
    } else if (std::string cut = TruncatedElf(path); !cut.empty()) {
      l.status = refused(fmt::format("does not load: it {}: reinstall slabfs", cut));
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
