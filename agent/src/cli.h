// Command line -> what to do. Grammar:
//   gj-mpirun [gj-mpirun options] <script> [script args...]
//   gj-mpirun [gj-mpirun options] <mpiexec args...> -- <script> [script args...]
// gj-mpirun's own options come first. If the first remaining word starts with '-', the words
// up to the first `--` are passed to mpiexec (before the script); otherwise the first
// remaining word is the script and every later word, `--` included, belongs to the script.
// Flags override their environment variables (env_table()).
#pragma once

#include <string>
#include <vector>

#include "env_map.h"
#include "plan.h"

namespace gj {

struct CommandLine {
  enum class Action { Run, Help, Version };
  Action action = Action::Run;
  bool dry_run = false;
  bool json = false;
  EnvMap overrides;  // variable -> value set by flags
  Invocation invocation;
  bool has_script = false;
};

// args excludes argv[0]. Throws AgentError (kUsage) for unknown values, missing `--`, ...
CommandLine parse_command_line(const std::vector<std::string>& args);

// The environment with flag overrides applied (--export appends to GJ_EXPORT).
EnvMap apply_overrides(const EnvMap& env, const CommandLine& cli);

// --help: usage, every option, every environment variable with its default.
std::string help_text();

std::string version_text();

}  // namespace gj
