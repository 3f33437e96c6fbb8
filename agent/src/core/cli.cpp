#include "cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <memory>

#include "agent_error.h"
#include "quote.h"
#include "exit_codes.h"
#include "settings.h"

#ifndef GJ_VERSION
#define GJ_VERSION "0.0.0"
#endif

namespace gj {
namespace {

// gj-mpirun's own options, built from settings_table(): every value a flag gives is collected
// into `flags` (variable -> values), never into the environment.
struct Parser {
  CLI::App app{"gj-mpirun: launch agent for MPI training jobs on Kubernetes/Volcano", "gj-mpirun"};
  bool help = false, version = false, dry_run = false, json = false;
  FlagValues flags;
  std::vector<std::string> switches_seen;  // switch flags given, for contradiction checks
  std::vector<std::string> mpi_args;

  Parser() {
    app.set_help_flag();
    app.allow_extras();
    app.add_flag("-h,--help", help, "print this help and exit");
    app.add_flag("--version", version, "print the version and exit");
    app.add_flag("--dry-run", dry_run, "print MPI_HOSTS, MPI_NP and the command; start nothing");
    app.add_flag("--json", json, "with --dry-run: one JSON object instead of text");
    for (const Setting& row : settings_table()) {
      for (const SettingFlag& f : row.flags) {
        const std::string var = row.variable;
        const std::string shown_default = row.shown_default().empty() ? "" : "; default " + row.shown_default();
        if (f.implied == nullptr) {
          std::string desc = std::string(row.help) + " (" + var + shown_default + ")";
          if (row.type == SettingType::List) {
            app.add_option_function<std::vector<std::string>>(
                f.name, [this, var](const std::vector<std::string>& v) { flags[var] = v; }, desc);
          } else {
            app.add_option_function<std::string>(
                f.name, [this, var](const std::string& v) { flags[var].push_back(v); }, desc);
          }
        } else {
          const std::string desc = std::string(f.help != nullptr ? f.help : row.help) + " (" + var + "=" + f.implied +
                                   "; default " + var + "=" + row.shown_default() + ")";
          app.add_flag_callback(
              f.name,
              [this, var, name = std::string(f.name), value = std::string(f.implied)] {
                flags[var].push_back(value);
                switches_seen.push_back(name);
              },
              desc);
        }
      }
    }
    app.add_option("--mpi-arg", mpi_args, "one extra mpiexec argument, before the script (repeatable; use --mpi-arg=-x)");
  }

  bool seen(const std::string& name) const {
    return std::find(switches_seen.begin(), switches_seen.end(), name) != switches_seen.end();
  }

  // Number of leading words that are gj-mpirun options (with their values).
  std::size_t option_prefix(const std::vector<std::string>& args) const {
    std::size_t i = 0;
    while (i < args.size()) {
      const std::string& a = args[i];
      if (a.size() < 2 || a[0] != '-' || a == "--") break;
      const auto eq = a.find('=');
      const std::string name = a.substr(0, eq);
      const CLI::Option* opt = app.get_option_no_throw(name);
      if (opt == nullptr) break;
      const bool takes_value = opt->get_expected_min() > 0;
      i += (takes_value && eq == std::string::npos) ? 2 : 1;
    }
    return std::min(i, args.size());
  }
};

[[noreturn]] void usage(const std::string& msg) {
  throw AgentError{exit_code::kUsage, msg + "; see gj-mpirun --help"};
}

}  // namespace

CommandLine parse_command_line(const std::vector<std::string>& args) {
  Parser p;
  const std::size_t n = p.option_prefix(args);
  std::vector<std::string> options(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(n));
  std::vector<std::string> rest(args.begin() + static_cast<std::ptrdiff_t>(n), args.end());
  std::vector<std::string> reversed(options.rbegin(), options.rend());  // CLI11 parses a reversed vector
  try {
    p.app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    usage(std::string("command line: ") + e.what());
  }
  CommandLine cli;
  if (p.help) cli.action = CommandLine::Action::Help;
  else if (p.version) cli.action = CommandLine::Action::Version;
  cli.dry_run = p.dry_run;
  cli.json = p.json;
  if (p.json && !p.dry_run) usage("--json only applies with --dry-run");
  if (p.seen("--supervise") && p.seen("--no-supervise")) usage("--supervise and --no-supervise contradict each other");
  const auto exports = p.flags.find("GJ_EXPORT");
  for (const auto& e : exports != p.flags.end() ? exports->second : std::vector<std::string>{}) {
    if (e.find(',') != std::string::npos) {
      const auto eq = e.find('=');  // NAME=VALUE: the value may be a secret, show the name only
      usage("--export " + (eq == std::string::npos ? quoted_value(e) : quoted_value(e.substr(0, eq)) + "=...") +
            " contains a comma; repeat --export instead");
    }
  }
  cli.flags = p.flags;

  cli.invocation.mpi_args = p.mpi_args;
  std::size_t script_at = 0;
  if (!rest.empty() && rest[0] == "--") {
    script_at = 1;
  } else if (!rest.empty() && rest[0].size() > 1 && rest[0][0] == '-') {
    const auto sep = std::find(rest.begin(), rest.end(), "--");
    if (sep == rest.end())
      usage(quoted_value(rest[0]) + " is not a gj-mpirun option; to pass mpiexec arguments end them with `--` before the "
            "script");
    cli.invocation.mpi_args.insert(cli.invocation.mpi_args.end(), rest.begin(), sep);
    script_at = static_cast<std::size_t>(sep - rest.begin()) + 1;
  }
  if (script_at < rest.size()) {
    cli.has_script = true;
    cli.invocation.script = rest[script_at];
    cli.invocation.script_args.assign(rest.begin() + static_cast<std::ptrdiff_t>(script_at) + 1, rest.end());
  }
  return cli;
}

std::string help_text() {
  Parser p;
  std::string out =
      "Usage: gj-mpirun [options] <script> [script args...]\n"
      "       gj-mpirun [options] <mpiexec args...> -- <script> [script args...]\n\n"
      "The container command of every pod of an MPI job. A worker becomes `sshd -D -e`; the master\n"
      "computes hosts and np, waits for every host's sshd, starts its own sshd and runs mpiexec.\n"
      "A .py script runs under the Python interpreter; anything else must be executable.\n\n"
      "Options:\n";
  for (const CLI::Option* opt : p.app.get_options()) {
    std::string names = opt->get_name(false, true);
    if (opt->get_expected_min() > 0) names += " <value>";
    out += "  " + names;
    out += std::string(names.size() < 30 ? 30 - names.size() : 1, ' ');
    out += opt->get_description() + "\n";
  }
  out += "\nEnvironment variables (flags override them):\n";
  for (const Setting& row : settings_table()) {
    out += std::string("  ") + row.variable;
    if (!row.flags.empty()) out += " (" + row.flag_text() + ")";
    out += std::string("\n      ") + row.help;
    if (!row.shown_default().empty()) out += " [default: " + row.shown_default() + "]";
    out += "\n";
  }
  out +=
      "\nExit codes: 0 ok; 2 usage; 3 bad environment; 4 no runnable plan; 5 workers not reachable;\n"
      "6 sshd/key setup failed; 7 a rank failed (the log ends with a summary of which and why);\n"
      "126 not executable; 127 not found; 1 internal error. Once mpiexec runs and no rank failed,\n"
      "its exit status is gj-mpirun's (128+N when killed by signal N).\n";
  return out;
}

// GJ_LINKAGE: "static" or "dynamically linked" (agent/CMakeLists.txt, GJ_AGENT_STATIC).
std::string version_text() { return std::string("gj-mpirun ") + GJ_VERSION + " (" + GJ_LINKAGE + ")\n"; }

}  // namespace gj
