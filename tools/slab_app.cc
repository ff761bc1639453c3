#include "tools/slab_app.h"

#include <cstdio>
#include <exception>
#include <iostream>
#include <new>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

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

std::string FailureLine(std::string_view command, const Status& s) {
  std::string_view what = s.message().empty() ? CodeName(s.code()) : s.message();
  return fmt::format("slab: {}: {}", command, what);
}

int RunSlab(int argc, char** argv) {
  CLI::App app{"slab: create, inspect, import and export slabfs containers (.slab files)",
               "slab"};
  app.set_version_flag("--version", fmt::format("slab (slabfs) {}", slabfs::Version()));
  app.require_subcommand(1);
  app.fallthrough();
  app.failure_message([](const CLI::App* /*app*/, const CLI::Error& e) {
    return fmt::format("slab: {}\nRun with --help for more information.\n", e.what());
  });
  std::string log_level = "off";
  app.add_option("--log-level", log_level,
                 "slabfs engine log lines on stderr: trace, debug, info, warn, error or off")
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
