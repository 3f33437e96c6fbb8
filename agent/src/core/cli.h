// Command line -> what to do. Grammar:
//   gj-mpirun [gj-mpirun options] <script> [script args...]
//   gj-mpirun [gj-mpirun options] <mpiexec args...> -- <script> [script args...]
// gj-mpirun's own options come first. If the first remaining word starts with '-', the words
// up to the first `--` are passed to mpiexec (before the script); otherwise the first
// remaining word is the script and every later word, `--` included, belongs to the script.
// Flags are rows of settings_table(); they override their variables.
#pragma once

#include <string>
#include <vector>

#include "env_map.h"
#include "plan.h"
#include "settings.h"

namespace gj {

struct CommandLine {
  enum class Action { Run, Help, Version };
  Action action = Action::Run;
  bool dry_run = false;
  bool json = false;
  FlagValues flags;  // variable -> values the flags gave (resolve_settings applies them)
  Invocation invocation;
  bool has_script = false;
};

// args excludes argv[0]. Throws AgentError (kUsage) for unknown values, missing `--`, ...
CommandLine parse_command_line(const std::vector<std::string>& args);

// --help: usage, every option, every environment variable with its default.
std::string help_text();

std::string version_text();

}  // namespace gj
