// gj-mpirun: environment -> JobSpec -> LaunchPlan -> argv -> the one exec. This file only
// wires the steps together and turns errors into exit codes.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <utility>

#include "agent_error.h"
#include "cli.h"
#include "exit_codes.h"
#include "job_spec.h"
#include "logging.h"
#include "preflight.h"
#include "preflight_run.h"
#include "rank_env.h"
#include "roles.h"
#include "settings.h"
#include "sys/process_registry.h"
#include "sys/termination_log.h"
#include "sys/warnings.h"
#include "sys/termination.h"
#include "quote.h"

extern char** environ;

namespace {

gj::EnvMap copy_environment() {
  gj::EnvMap env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq != std::string::npos) env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return env;
}

int fail(int code, const std::string& raw_message, bool write_termination, const gj::EnvMap& env) {
  // Values are quoted where a message is built; this catches text we did not write (strerror,
  // a child's output), so an error is always exactly one log line.
  const std::string message = gj::one_line(raw_message);
  spdlog::error("{}", message);
  // A failure after the master started its background sshd (gate deadline, key copy, exec)
  // must not leave that sshd behind.
  gj::terminate_owned_processes(std::chrono::milliseconds(500));
  if (write_termination) {
    std::string path = "/dev/termination-log";
    try {
      path = gj::resolve_settings_of(env, {"GJ_TERMINATION_LOG"}).termination_log;
    } catch (const std::exception&) {  // a bad setting is reported already; the default path then
    }
    gj::write_termination_message_to(path, message);
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  const gj::EnvMap env = copy_environment();
  gj::setup_logging("", "info");
  gj::set_warning_sink([](const std::string& line) { spdlog::warn("{}", gj::one_line(line)); });
  bool dry_run = false;
  try {
    // mpiexec starts every rank as `gj-mpirun --rank-exec ...`: no role, no settings, no log
    // lines of its own but warnings.
    if (argc > 1 && std::string(argv[1]) == gj::kRankExecFlag) {
      gj::setup_logging("rank", "warn");
      dry_run = true;  // a rank's failure is the job's; the termination log is the master's
      return gj::run_rank(std::vector<std::string>(argv + 2, argv + argc), env);
    }
    // The pre-flight probes the master starts on each pod (preflight_run.h): they print lines for
    // the master to read; their errors are the master's to report.
    if (argc > 1) {
      const std::string mode = argv[1];
      const std::vector<std::string> rest(argv + 2, argv + argc);
      if (mode == gj::kPreflightFactsFlag || mode == gj::kPreflightNvmlFlag || mode == gj::kPreflightNetFlag) {
        gj::setup_logging("preflight", "warn");
        dry_run = true;
        if (mode == gj::kPreflightFactsFlag) return gj::run_preflight_facts(env);
        if (mode == gj::kPreflightNvmlFlag) return gj::run_preflight_nvml(env);
        return gj::run_preflight_net(rest);
      }
      if (mode == gj::kGpuUseFlag) {
        gj::setup_logging("rank", "warn");
        dry_run = true;
        return gj::run_gpu_use(env, rest);
      }
    }
    gj::install_termination_handlers();  // PID 1 ignores SIGTERM without one (sys/termination.h)
    const gj::CommandLine cli = gj::parse_command_line(std::vector<std::string>(argv + 1, argv + argc));
    dry_run = cli.dry_run;
    if (cli.action == gj::CommandLine::Action::Help) {
      std::fputs(gj::help_text().c_str(), stdout);
      return gj::exit_code::kOk;
    }
    if (cli.action == gj::CommandLine::Action::Version) {
      std::fputs(gj::version_text().c_str(), stdout);
      return gj::exit_code::kOk;
    }
    gj::AgentSettings settings = gj::resolve_settings(env, cli.flags);
    gj::setup_logging("", settings.log_level);
    const gj::JobSpec spec = gj::parse_job_spec(env, std::move(settings));
    // The pod name is an outside value: escaped and shortened like every value in a message.
    gj::setup_logging(std::string(gj::to_string(spec.role)) + "@" + (spec.pod_name.empty() ? "?" : gj::escaped_value(spec.pod_name)),
                      spec.settings.log_level);
    return spec.role == gj::Role::Worker ? gj::run_worker(spec, env, cli) : gj::run_master(spec, env, cli);
  } catch (const gj::AgentError& e) {
    return fail(e.exit_code, e.message, !dry_run, env);
  } catch (const gj::LaunchError& e) {
    return fail(e.exit_code, e.message, !dry_run, env);
  } catch (const std::exception& e) {
    return fail(gj::exit_code::kInternal, std::string("internal error: ") + e.what(), !dry_run, env);
  }
}
