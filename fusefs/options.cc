#include "fusefs/options.h"

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <fuse_opt.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

namespace slabfs::fusefs {
namespace {

enum Key {
  kKeyReadOnly,
  kKeyReadWrite,
  kKeyCacheSize,
  kKeyCacheMax,
  kKeyCommitInterval,
  kKeyFollow,
  kKeyFollowEvery,
  kKeyReuseDelay,
  kKeyNoSplice,
  kKeyLogLevel,
  kKeyLogFile,
  kKeyNonEmpty,
  kKeyBulk,
  kKeyFsName,
  kKeySubtype,
  kKeyFormat,
  kKeyFstabOnly,
};

// slabfs's own -o options: one table for parsing (fuse_opt templates; one
// ending in '=' matches "name=value") and for --help.
struct OptionSpec {
  const char* templ;
  Key key;
  const char* shown;  // as --help shows it; nullptr: not shown
  const char* help;
};
constexpr OptionSpec kOptions[] = {
    {"ro", kKeyReadOnly, "-o ro", "mount read-only: reads the last commit, whole, while another process writes"},
    {"rw", kKeyReadWrite, "-o rw", "mount read-write (the default)"},
    {"cache_size=", kKeyCacheSize, "-o cache_size=SIZE",
     "chunk cache budget, a hard bound unless cache_max is given, e.g. 256M, 1G (default 64M)"},
    {"cache_max=", kKeyCacheMax, "-o cache_max=SIZE",
     "let the cache grow past cache_size, up to SIZE, while the working set does not fit (default: never)"},
    {"commit_interval=", kKeyCommitInterval, "-o commit_interval=S",
     "commit every S seconds while dirty; 0 = only on fsync, close after a write, namespace changes and unmount "
     "(default 5)"},
    {"follow", kKeyFollow, "-o follow[=S]",
     "with ro: show new commits of a writer (another mount, slab, the API), looking every S seconds "
     "(default 1)"},
    {"follow=", kKeyFollowEvery, nullptr, nullptr},
    {"reuse_delay=", kKeyReuseDelay, "-o reuse_delay=S",
     "reuse space a commit freed only S seconds after it, for readers on hosts that fcntl locks do "
     "not reach (default 60 on network and FUSE filesystems, else 0)"},
    {"nosplice", kKeyNoSplice, "-o nosplice",
     "copy the bytes of every read reply; by default, reads of unfiltered data that lie in a few runs of the "
     "container file are spliced from it (when the daemon may size its pipes for that)"},
    {"log_level=", kKeyLogLevel, "-o log_level=LEVEL", "trace, debug, info, warn, error or off (default info)"},
    {"log_file=", kKeyLogFile, "-o log_file=PATH",
     "append the log to PATH too, and there alone instead of syslog once the daemon detaches "
     "(see \"Logs\" below)"},
    {"bulk", kKeyBulk, "-o bulk",
     "for unpacking many files (tar x, git clone, rsync): close, mkdir, rename, rm and setfattr return "
     "without waiting for a commit; fsync, sync, the commit timer and unmount still commit (see "
     "docs/mount.md, \"Commits and durability\")"},
    {"format=", kKeyFormat, "-o format=F",
     "what CONTAINER is: slab, hdf5 (also netCDF-4) or zarr (default: found from the file's signature); "
     "HDF5 and netCDF-4 files mount read-only, Zarr stores read-write unless ro (docs/mount.md, \"Mounting "
     "HDF5, netCDF and Zarr in place\")"},
    {"nonempty", kKeyNonEmpty, "-o nonempty",
     "mount over a directory that holds files (they are hidden while mounted); by default slabfs refuses"},
    {"fsname=", kKeyFsName, nullptr, nullptr},
    {"subtype=", kKeySubtype, nullptr, nullptr},
    // Words of /etc/fstab and systemd that mean something to mount(8) or
    // systemd, not to the filesystem: accepted and dropped (and x-*, see
    // ProcessOption).
    {"defaults", kKeyFstabOnly, nullptr, nullptr},
    {"auto", kKeyFstabOnly, nullptr, nullptr},
    {"noauto", kKeyFstabOnly, nullptr, nullptr},
    {"user", kKeyFstabOnly, nullptr, nullptr},
    {"nouser", kKeyFstabOnly, nullptr, nullptr},
    {"users", kKeyFstabOnly, nullptr, nullptr},
    {"owner", kKeyFstabOnly, nullptr, nullptr},
    {"group", kKeyFstabOnly, nullptr, nullptr},
    {"nofail", kKeyFstabOnly, nullptr, nullptr},
    {"_netdev", kKeyFstabOnly, nullptr, nullptr},
    {"comment=", kKeyFstabOnly, nullptr, nullptr},
};

// The table as libfuse wants it: NULL-terminated.
const fuse_opt* FuseOptTable() {
  static const std::vector<fuse_opt> table = [] {
    std::vector<fuse_opt> t;
    for (const OptionSpec& o : kOptions) t.push_back(fuse_opt FUSE_OPT_KEY(o.templ, o.key));
    t.push_back(fuse_opt FUSE_OPT_END);
    return t;
  }();
  return table.data();
}

struct ParseState {
  MountConfig* config = nullptr;
  std::string error;
  bool have_container = false;
  bool have_fsname = false;
  bool have_subtype = false;
};

std::string_view ValueOf(const char* arg) {
  std::string_view a(arg);
  size_t eq = a.find('=');
  return eq == std::string_view::npos ? std::string_view() : a.substr(eq + 1);
}

// fuse_opt_parse's processing function: returns 1 to keep the argument for
// libfuse, 0 to consume it, -1 to fail.
int ProcessOption(void* data, const char* arg, int key, fuse_args* /*outargs*/) {
  auto* st = static_cast<ParseState*>(data);
  MountConfig& cfg = *st->config;
  switch (key) {
    case FUSE_OPT_KEY_NONOPT:
      if (!st->have_container) {
        st->have_container = true;
        cfg.container = arg;
        return 0;
      }
      return 1;                                         // the mount point, for fuse_parse_cmdline
    case kKeyReadOnly: cfg.read_only = true; return 1;  // the kernel mounts read-only too
    case kKeyReadWrite: cfg.read_only = false; return 1;
    case kKeyCacheSize: {
      auto bytes = ParseSize(ValueOf(arg));
      if (!bytes) {
        st->error = fmt::format("bad cache_size: {}", bytes.error().message());
        return -1;
      }
      cfg.cache_bytes = *bytes;
      return 0;
    }
    case kKeyCacheMax: {
      auto bytes = ParseSize(ValueOf(arg));
      if (!bytes) {
        st->error = fmt::format("bad cache_max: {}", bytes.error().message());
        return -1;
      }
      cfg.cache_max_bytes = *bytes;
      return 0;
    }
    case kKeyCommitInterval: {
      auto interval = ParseInterval(ValueOf(arg));
      if (!interval) {
        st->error = fmt::format("bad commit_interval: {}", interval.error().message());
        return -1;
      }
      cfg.commit_interval = *interval;
      return 0;
    }
    case kKeyFollow: cfg.follow_interval = kDefaultFollowInterval; return 0;
    case kKeyFollowEvery: {
      auto interval = ParseInterval(ValueOf(arg));
      if (!interval) {
        st->error = fmt::format("bad follow: {}", interval.error().message());
        return -1;
      }
      // Sub-10 ms refreshes would only burn a core.
      cfg.follow_interval = interval->count() == 0 ? *interval : std::max(*interval, std::chrono::milliseconds(10));
      return 0;
    }
    case kKeyReuseDelay: {
      auto delay = ParseInterval(ValueOf(arg));
      if (!delay) {
        st->error = fmt::format("bad reuse_delay: {}", delay.error().message());
        return -1;
      }
      cfg.reuse_delay_seconds = static_cast<int>((delay->count() + 999) / 1000);
      return 0;
    }
    case kKeyNoSplice: cfg.splice_reads = false; return 0;
    case kKeyFormat: {
      auto format = stores::ParseStoreFormat(ValueOf(arg));
      if (!format) {
        st->error = fmt::format("bad format: {}", format.error().message());
        return -1;
      }
      cfg.format = *format;
      cfg.format_given = true;
      return 0;
    }
    case kKeyLogLevel: {
      std::string_view level = ValueOf(arg);
      if (!IsLogLevel(level)) {
        st->error = fmt::format("bad log_level '{}': expected trace, debug, info, warn, error or off", level);
        return -1;
      }
      cfg.log_level = std::string(level);
      return 0;
    }
    case kKeyLogFile: {
      std::string_view path = ValueOf(arg);
      if (path.empty()) {
        st->error = "bad log_file: expected a file name, e.g. log_file=/tmp/slabfs.log";
        return -1;
      }
      // Absolute now: the daemon changes directory to / when it detaches.
      cfg.log_file = boost::filesystem::absolute(std::string(path)).lexically_normal().string();
      return 0;
    }
    case kKeyNonEmpty:
      // libfuse 3 no longer knows it (it never checks); slabfs does.
      cfg.allow_nonempty = true;
      return 0;
    case kKeyBulk: cfg.bulk = true; return 0;
    case kKeyFsName: st->have_fsname = true; return 1;
    case kKeySubtype: st->have_subtype = true; return 1;
    case kKeyFstabOnly: return 0;
    case FUSE_OPT_KEY_OPT:
      // x-systemd.automount, x-gvfs-show, ...: for systemd and desktops.
      return std::string_view(arg).starts_with("x-") ? 0 : 1;
    default: return 1;
  }
}

// libfuse reports parse errors through its log function; while parsing they
// are collected here so that the caller can print one message.
std::string* g_captured_fuse_log = nullptr;

[[gnu::format(printf, 2, 0)]] void CaptureFuseLog(enum fuse_log_level /*level*/, const char* fmt, va_list ap) {
  char buf[1024];
  int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  if (n > 0 && g_captured_fuse_log != nullptr) {
    g_captured_fuse_log->append(buf, std::min<size_t>(static_cast<size_t>(n), sizeof buf - 1));
  }
}

struct FuseArgsDeleter {
  void operator()(fuse_args* a) const {
    fuse_opt_free_args(a);
    delete a;
  }
};
using FuseArgsPtr = std::unique_ptr<fuse_args, FuseArgsDeleter>;

// Escapes ',' and '\' so that a path survives libfuse's option splitting.
std::string EscapeOptionValue(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == ',' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

Result<uint64_t> ParseSize(std::string_view text) {
  const std::string original(text);
  auto bad = [&](std::string_view why) {
    return Err(Status::InvalidArgument(fmt::format("'{}': {} (expected e.g. 1048576, 512K, 64M, 1G)", original, why)));
  };
  size_t i = 0;
  auto numeric = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; };
  while (i < text.size() && numeric(text[i])) ++i;
  std::string_view number = text.substr(0, i);
  std::string suffix(text.substr(i));
  if (number.empty()) return bad("not a size");
  for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (suffix.ends_with("ib"))
    suffix.resize(suffix.size() - 2);
  else if (suffix.size() == 2 && suffix[1] == 'b')
    suffix.resize(1);
  else if (suffix == "b")
    suffix.clear();
  int shift = 0;
  if (suffix.empty())
    shift = 0;
  else if (suffix == "k")
    shift = 10;
  else if (suffix == "m")
    shift = 20;
  else if (suffix == "g")
    shift = 30;
  else if (suffix == "t")
    shift = 40;
  else
    return bad("unknown unit");

  if (number.find('.') == std::string_view::npos) {
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
    if (ec != std::errc() || end != number.data() + number.size()) return bad("not a size");
    if (v == 0) return bad("must be positive");
    if (shift > 0 && v > (UINT64_MAX >> shift)) return bad("too large");
    return v << shift;
  }
  double v = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
  if (ec != std::errc() || end != number.data() + number.size()) return bad("not a size");
  double bytes = std::ldexp(v, shift);
  if (!(bytes >= 1)) return bad("must be positive");
  if (bytes >= 18446744073709551616.0) return bad("too large");
  return static_cast<uint64_t>(bytes);
}

Result<std::chrono::milliseconds> ParseInterval(std::string_view text) {
  const std::string original(text);
  std::string_view number = text;
  if (number.ends_with("s")) number.remove_suffix(1);
  double seconds = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), seconds);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size() || !(seconds >= 0) ||
      seconds > 86400) {
    return Err(Status::InvalidArgument(fmt::format("'{}': expected seconds between 0 (off) and 86400", original)));
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(seconds * 1000)));
}

bool IsLogLevel(std::string_view level) {
  return level == "trace" || level == "debug" || level == "info" || level == "warn" || level == "error" ||
         level == "off";
}

std::string Usage(std::string_view program) {
  std::string out = fmt::format(
      "usage: {} CONTAINER MOUNTPOINT [options]\n"
      "\n"
      "Mounts the slabfs container file CONTAINER at MOUNTPOINT: groups are\n"
      "directories, datasets are files holding their elements in C order.\n"
      "The command returns once the mount is live (unless -f).\n"
      "\n"
      "slabfs options:\n",
      program);
  for (const OptionSpec& o : kOptions) {
    if (o.shown == nullptr) continue;
    out += fmt::format("    {:<22} {}\n", o.shown, o.help);
  }
  out +=
      "    -f                     stay in the foreground, log to stderr\n"
      "    -s                     single-threaded\n"
      "    -d                     libfuse debug output (implies -f)\n"
      "\n"
      "Logs: every refused operation is logged with its reason (\"write /a/ds refused\n"
      "(EFBIG): ...\"). The log goes to stderr until the mount is live, then to\n"
      "syslog (journalctl -t slabfs, or /var/log/syslog), or with -o log_file=PATH\n"
      "to PATH; with -f it stays on stderr. The last refusal's reason is also\n"
      "readable on the mount:  getfattr -n user.slab.last_error MOUNTPOINT\n"
      "\n"
      "MOUNTPOINT must be an empty directory that is not a mount point already\n"
      "(-o nonempty allows a non-empty one).\n"
      "\n"
      "Accepted and ignored, for /etc/fstab and systemd: defaults, auto, noauto,\n"
      "user, nouser, users, owner, group, nofail, _netdev, comment=..., x-*.\n"
      "An fstab line:  /data/run.slab  /mnt/run  fuse.slabfs  noauto,user,cache_size=256M  0 0\n";
  return out;
}

Status CheckFuseOptions(const MountConfig& cfg) {
  fuse_args args = FUSE_ARGS_INIT(0, nullptr);
  for (const std::string& a : cfg.fuse_args) {
    if (fuse_opt_add_arg(&args, a.c_str()) != 0) throw std::bad_alloc();
  }
  std::string messages;
  g_captured_fuse_log = &messages;
  fuse_set_log_func(CaptureFuseLog);
  const fuse_lowlevel_ops ops{};
  fuse_session* se = fuse_session_new(&args, &ops, sizeof ops, nullptr);
  fuse_set_log_func(nullptr);
  g_captured_fuse_log = nullptr;
  fuse_opt_free_args(&args);
  if (se != nullptr) {
    fuse_session_destroy(se);
    return Status::OK();
  }
  std::string msg = Trimmed(messages);
  // libfuse: "fuse: unknown option(s): `-o bogus'" over several lines.
  for (char& c : msg) {
    if (c == '\n') c = ' ';
  }
  if (msg.starts_with("fuse: ")) msg.erase(0, 6);
  return Status::InvalidArgument(msg.empty() ? "bad options" : msg);
}

Result<MountConfig> ParseCommandLine(const std::vector<std::string>& argv) {
  MountConfig cfg;
  FuseArgsPtr args(new fuse_args FUSE_ARGS_INIT(0, nullptr));
  for (const std::string& a : argv) {
    if (fuse_opt_add_arg(args.get(), a.c_str()) != 0) throw std::bad_alloc();
  }
  if (argv.empty() && fuse_opt_add_arg(args.get(), "slabfs") != 0) throw std::bad_alloc();

  std::string fuse_messages;
  g_captured_fuse_log = &fuse_messages;
  fuse_set_log_func(CaptureFuseLog);
  struct RestoreLog {
    ~RestoreLog() {
      fuse_set_log_func(nullptr);
      g_captured_fuse_log = nullptr;
    }
  } restore;

  ParseState st;
  st.config = &cfg;
  if (fuse_opt_parse(args.get(), &st, FuseOptTable(), ProcessOption) != 0) {
    std::string msg = !st.error.empty() ? st.error : Trimmed(fuse_messages);
    return Err(Status::InvalidArgument(msg.empty() ? "bad option" : msg));
  }
  // Our defaults go in before libfuse parses, so that the user's own
  // fsname/subtype win and libfuse does not add a subtype of its own.
  if (!st.have_fsname && !cfg.container.empty()) {
    std::string abs = boost::filesystem::absolute(cfg.container).lexically_normal().string();
    if (fuse_opt_add_arg(args.get(), ("-ofsname=" + EscapeOptionValue(abs)).c_str()) != 0) {
      throw std::bad_alloc();
    }
  }
  if (!st.have_subtype && fuse_opt_add_arg(args.get(), "-osubtype=slabfs") != 0) {
    throw std::bad_alloc();
  }
  // The kernel checks permissions against the modes slabfs reports.
  if (fuse_opt_add_arg(args.get(), "-odefault_permissions") != 0) throw std::bad_alloc();

  fuse_cmdline_opts opts{};
  if (fuse_parse_cmdline(args.get(), &opts) != 0) {
    free(opts.mountpoint);
    std::string msg = Trimmed(fuse_messages);
    if (msg.starts_with("fuse: ")) msg.erase(0, 6);
    return Err(Status::InvalidArgument(msg.empty() ? "bad command line" : msg));
  }
  std::unique_ptr<char, decltype(&free)> mountpoint(opts.mountpoint, &free);
  cfg.foreground = opts.foreground != 0;
  cfg.single_thread = opts.singlethread != 0;
  cfg.debug = opts.debug != 0;
  cfg.clone_fd = opts.clone_fd != 0;
  cfg.max_idle_threads = opts.max_idle_threads;
  cfg.max_threads = opts.max_threads;
  cfg.show_help = opts.show_help != 0;
  cfg.show_version = opts.show_version != 0;
  if (cfg.show_help || cfg.show_version) return cfg;

  if (cfg.container.empty()) {
    return Err(Status::InvalidArgument("missing CONTAINER and MOUNTPOINT"));
  }
  if (mountpoint == nullptr) return Err(Status::InvalidArgument("missing MOUNTPOINT"));
  if (cfg.follow_interval.count() > 0 && !cfg.read_only) {
    return Err(
        Status::InvalidArgument("follow needs ro: a read-write mount is the writer and always shows its own changes"));
  }
  cfg.container = boost::filesystem::absolute(cfg.container).lexically_normal().string();
  cfg.mountpoint = mountpoint.get();
  for (int i = 0; i < args->argc; ++i) cfg.fuse_args.emplace_back(args->argv[i]);
  if (!cfg.format_given) {
    // Not an HDF5 file or Zarr store: the container's own open says what
    // is wrong with it (missing, damaged, not a container).
    auto found = stores::DetectStoreFormat(cfg.container);
    cfg.format = found ? *found : stores::StoreFormat::kSlab;
  }
  if (cfg.format != stores::StoreFormat::kSlab) {
    if (cfg.follow_interval.count() > 0) {
      return Err(Status::InvalidArgument(fmt::format("follow is for slab containers: {} is mounted as {}, read once",
                                                     cfg.container, stores::StoreFormatName(cfg.format))));
    }
    if (cfg.bulk) {
      return Err(Status::InvalidArgument(
          fmt::format("bulk is for slab containers: {} is mounted as {}, whose changes are durable when fsync or "
                      "close returns",
                      cfg.container, stores::StoreFormatName(cfg.format))));
    }
    // A Zarr store is written in place unless mounted ro; an HDF5 file is
    // never written, and the kernel refuses writes on its mount.
    if (cfg.format != stores::StoreFormat::kZarr && !cfg.read_only) {
      cfg.read_only = true;
      cfg.fuse_args.emplace_back("-oro");
    }
  }
  return cfg;
}

}  // namespace slabfs::fusefs
