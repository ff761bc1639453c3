#include "tools/slab_app.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "slabfs/container.h"
#include "tools/cmd_attr.h"
#include "tools/cmd_fsck.h"
#include "tools/cmd_list.h"
#include "tools/cmd_repack.h"
#include "tools/cmd_sparse.h"
#include "tools/cmd_transfer.h"
#include "tools/cmd_tree.h"
#include "tools/commands.h"

namespace slabfs::tools {
namespace {

// The first argument that is neither an option nor an option's value: the
// command the user meant ("" if none).
std::string_view CommandWord(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--") return i + 1 < argc ? std::string_view(argv[i + 1]) : std::string_view();
    if (a == "--log-level") {
      ++i;  // its value
      continue;
    }
    if (!a.starts_with("-")) return a;
  }
  return {};
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The HDF5 store (stores/hdf5) logs through spdlog's default logger, which
// writes to stdout at level info: its lines would land in `slab ls`'s
// output. They go where the engine's go instead (stderr, --log-level).
void RouteDefaultLogger() {
  if (auto engine_log = spdlog::get("slabfs")) spdlog::set_default_logger(engine_log);
}

}  // namespace

std::string UnknownCommandMessage(std::string_view word, const std::vector<std::string>& commands) {
  std::string closest;
  size_t best = 3;  // suggest only near misses: "lst", "infos", "mkdir"
  for (const std::string& c : commands) {
    size_t d = EditDistance(word, c);
    if (d < best) {
      best = d;
      closest = c;
    }
  }
  std::string msg = fmt::format("slab: unknown command '{}'", word);
  if (!closest.empty()) msg += fmt::format(" (did you mean '{}'?)", closest);
  msg += "\nRun 'slab --help' for the list of commands.\n";
  return msg;
}

std::string FailureLine(std::string_view command, const Status& s) {
  std::string_view what = s.message().empty() ? CodeName(s.code()) : s.message();
  return fmt::format("slab: {}: {}", command, what);
}

int RunSlab(int argc, char** argv) {
  CLI::App app{"slab: create, inspect, import and export slabfs containers (.slab files)", "slab"};
  app.set_version_flag("--version", fmt::format("slab (slabfs) {}", slabfs::Version()));
  app.require_subcommand(1);
  app.fallthrough();
  app.failure_message([](const CLI::App* /*app*/, const CLI::Error& e) {
    return fmt::format("slab: {}\nRun with --help for more information.\n", e.what());
  });
  std::string log_level = "off";
  app.add_option("--log-level", log_level, "slabfs engine log lines on stderr: trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->capture_default_str();

  CommandTable table;
  AddTreeCommands(app, table);
  AddListCommands(app, table);
  AddTransferCommands(app, table);
  AddAttrCommand(app, table);
  AddRepackCommand(app, table);
  AddSparseCommands(app, table);
  AddFsckCommand(app, table);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 takes a word that names no command for a stray argument and
    // says "A subcommand is required"; say what is wrong.
    std::string_view word = CommandWord(argc, argv);
    if (!word.empty() && e.get_exit_code() != 0) {
      std::vector<std::string> commands;
      for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        commands.push_back(sub->get_name());
      }
      if (std::find(commands.begin(), commands.end(), word) == commands.end()) {
        std::fputs(UnknownCommandMessage(word, commands).c_str(), stderr);
        return kExitUsage;
      }
    }
    // Prints help or the version to stdout, or the error to stderr.
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  const CommandTable::Entry* entry = table.Parsed();
  if (entry == nullptr) {
    std::fputs("slab: no command given\nRun with --help for more information.\n", stderr);
    return kExitUsage;
  }

  Status s;
  try {
    (void)SetLogLevel(log_level);
    RouteDefaultLogger();
    s = entry->action(std::cout);
  } catch (const std::bad_alloc&) {
    s = Status::IOError("out of memory");
  } catch (const std::exception& e) {
    s = Status::IOError(fmt::format("unexpected error: {}", e.what()));
  }
  std::cout.flush();
  if (s.ok() && !std::cout) s = Status::IOError("stdout: write error");
  if (!s.ok()) {
    std::string line = FailureLine(entry->app->get_name(), s);
    std::fprintf(stderr, "%s\n", line.c_str());
    return kExitFailure;
  }
  return entry->exit_status != nullptr ? *entry->exit_status : kExitOk;
}

}  // namespace slabfs::tools
