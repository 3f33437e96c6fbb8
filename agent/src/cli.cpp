#include "cli.h"

#include <CLI/CLI.hpp>
#include <memory>

#include "agent_error.h"
#include "sys/quote.h"
#include "exit_codes.h"
#include "job_spec.h"

#ifndef GJ_VERSION
#define GJ_VERSION "0.0.0"
#endif

namespace gj {
namespace {

// Options parsed into `values` (flag name -> value) so one table maps them to variables.
struct Parser {
  CLI::App app{"gj-mpirun: launch agent for MPI training jobs on Kubernetes/Volcano", "gj-mpirun"};
  bool help = false, version = false, dry_run = false, json = false;
  bool no_wait = false, ssh_check = false, no_sshd = false, supervise = false, no_supervise = false;
  bool no_default_exports = false;
  std::map<std::string, std::string> values;
  std::vector<std::string> exports, mpi_args;

  // Option name -> environment variable it overrides.
  const std::vector<std::pair<std::string, std::string>> value_options = {
      {"--log-level", "GJ_LOG_LEVEL"},     {"--mpi", "GJ_MPI"},
      {"--mpiexec", "GJ_MPIEXEC"},         {"--python", "GJ_PYTHON"},
      {"--sshd", "GJ_SSHD"},               {"--ssh-port", "GJ_SSH_PORT"},
      {"--ssh-connect-timeout", "GJ_SSH_CONNECT_TIMEOUT"},
      {"--ssh-dir", "GJ_SSH_DIR"},         {"--state-dir", "GJ_STATE_DIR"},
      {"--ready-timeout", "GJ_READY_TIMEOUT"},
      {"--hosts-file", "GJ_HOSTS_FILE"},   {"--hostfile-mode", "GJ_HOSTFILE_MODE"},
      {"--master-host", "GJ_MASTER_HOST"},
  };

  Parser() {
    app.set_help_flag();
    app.allow_extras();
    app.add_flag("-h,--help", help, "print this help and exit");
    app.add_flag("--version", version, "print the version and exit");
    app.add_flag("--dry-run", dry_run, "print MPI_HOSTS, MPI_NP and the command; start nothing");
    app.add_flag("--json", json, "with --dry-run: one JSON object instead of text");
    for (const auto& [flag, var] : value_options) {
      std::string desc = var;
      for (const auto& d : env_table())
        if (var == d.name) desc = std::string(d.meaning) + " (" + var + ")";
      app.add_option_function<std::string>(
          flag, [this, f = flag](const std::string& v) { values[f] = v; }, desc);
    }
    app.add_option("--export", exports, "forward NAME, NAME=VALUE or PREFIX* to every rank (repeatable; GJ_EXPORT)");
    app.add_option("--mpi-arg", mpi_args, "one extra mpiexec argument, before the script (repeatable; use --mpi-arg=-x)");
    app.add_flag("--no-default-exports", no_default_exports, "do not forward the default variable set (GJ_DEFAULT_EXPORTS=0)");
    app.add_flag("--no-wait", no_wait, "master: skip the readiness gate (GJ_NO_WAIT=1)");
    app.add_flag("--ssh-check", ssh_check, "readiness gate also requires an ssh login (GJ_SSH_CHECK=1)");
    app.add_flag("--no-sshd", no_sshd, "master: do not start its own sshd (GJ_NO_SSHD=1)");
    app.add_flag("--supervise", supervise, "supervise mpiexec: forward signals, reap zombies (GJ_SUPERVISE=1)");
    app.add_flag("--no-supervise", no_supervise, "exec mpiexec directly (GJ_SUPERVISE=0)");
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
  if (p.supervise && p.no_supervise) usage("--supervise and --no-supervise contradict each other");
  for (const auto& [flag, var] : p.value_options)
    if (const auto it = p.values.find(flag); it != p.values.end()) cli.overrides[var] = it->second;
  if (p.no_wait) cli.overrides["GJ_NO_WAIT"] = "1";
  if (p.ssh_check) cli.overrides["GJ_SSH_CHECK"] = "1";
  if (p.no_sshd) cli.overrides["GJ_NO_SSHD"] = "1";
  if (p.supervise) cli.overrides["GJ_SUPERVISE"] = "1";
  if (p.no_supervise) cli.overrides["GJ_SUPERVISE"] = "0";
  if (p.no_default_exports) cli.overrides["GJ_DEFAULT_EXPORTS"] = "0";
  for (const auto& e : p.exports) {
    if (e.find(',') != std::string::npos) {
      const auto eq = e.find('=');  // NAME=VALUE: the value may be a secret, show the name only
      usage("--export " + (eq == std::string::npos ? quoted_value(e) : quoted_value(e.substr(0, eq)) + "=...") +
            " contains a comma; repeat --export instead");
    }
  }
  if (!p.exports.empty()) {
    std::string joined;
    for (const auto& e : p.exports) joined += (joined.empty() ? "" : ",") + e;
    cli.overrides["GJ_EXPORT"] = joined;  // merged with the variable in apply_overrides
  }

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

EnvMap apply_overrides(const EnvMap& env, const CommandLine& cli) {
  EnvMap out = env;
  for (const auto& [name, value] : cli.overrides) {
    if (name == "GJ_EXPORT") {
      const auto it = env.find(name);
      out[name] = (it != env.end() && !it->second.empty()) ? it->second + "," + value : value;
    } else {
      out[name] = value;
    }
  }
  return out;
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
  for (const auto& d : env_table()) {
    out += std::string("  ") + d.name;
    if (d.flag[0] != '\0') out += std::string(" (") + d.flag + ")";
    out += std::string("\n      ") + d.meaning;
    if (d.default_text[0] != '\0') out += std::string(" [default: ") + d.default_text + "]";
    out += "\n";
  }
  out +=
      "\nExit codes: 0 ok; 2 usage; 3 bad environment; 4 no runnable plan; 5 workers not reachable;\n"
      "6 sshd/key setup failed; 126 not executable; 127 not found; 1 internal error. Once mpiexec\n"
      "runs, its exit status is gj-mpirun's (128+N when killed by signal N).\n";
  return out;
}

std::string version_text() { return std::string("gj-mpirun ") + GJ_VERSION + "\n"; }

}  // namespace gj
