#include "roles.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "agent_error.h"
#include "quote.h"
#include "dry_run.h"
#include "exit_codes.h"
#include "hosts.h"
#include "local_files.h"
#include "mpiexec_argv.h"
#include "mpijob.h"
#include "plan.h"
#include "sys/host_facts.h"
#include "host_name.h"
#include "sys/capture.h"
#include "sys/cpu_facts.h"
#include "sys/spawn.h"
#include "sys/supervise.h"
#include "sys/termination_log.h"
#include "sys/sshd_setup.h"
#include "sys/private_files.h"
#include "sys/rank_guard.h"
#include "sys/readiness.h"
#include "session_env.h"

extern char** environ;

namespace gj {
namespace {

constexpr const char* kVolcanoWorkerHosts = "/etc/volcano/worker.host";

// --hosts-file, else MPI_HOST, else Volcano's svc plugin file; nullopt when none exists.
std::optional<HostList> worker_hosts(const JobSpec& spec) {
  const std::string& file = spec.settings.hosts_file;
  if (!file.empty()) {
    const auto text = read_text_file(file, "--hosts-file/GJ_HOSTS_FILE");
    if (!text)
      throw AgentError{exit_code::kBadEnvironment,
                       quoted_setting("--hosts-file/GJ_HOSTS_FILE", file) + " does not exist; point it at the worker host file"};
    return parse_hosts_file("hosts file " + quoted_value(file), *text);
  }
  if (spec.mpi_host) return parse_host_list("MPI_HOST", *spec.mpi_host);
  if (const auto text = read_text_file(kVolcanoWorkerHosts, "worker host file"))
    return parse_hosts_file(std::string("hosts file ") + kVolcanoWorkerHosts, *text);
  return std::nullopt;
}

struct Flavour {
  MpiFlavour flavour;
  std::string source;
};

Flavour choose_flavour(const AgentSettings& s, bool dry_run) {
  if (s.mpi) return {*s.mpi, "from --mpi/GJ_MPI"};
  std::string out;
  spdlog::info("detecting the MPI flavour: `{} --version` (up to {} s; --mpi skips this)", s.mpiexec, s.detect_timeout_s);
  try {
    out = capture_output({s.mpiexec, "--version"}, std::chrono::seconds(s.detect_timeout_s));
  } catch (const LaunchError& e) {
    if (!dry_run) throw LaunchError{e.exit_code, e.message + "; pass --mpi=openmpi|openmpi5|mpich|intel to skip detection"};
    spdlog::warn("`{} --version` failed ({}); the dry run assumes Open MPI 4", s.mpiexec, e.message);
    return {MpiFlavour::OpenMpi4, "assumed: `mpiexec --version` failed"};
  }
  if (const std::string defect = known_mpi_defect(out); !defect.empty()) spdlog::warn("{}", defect);
  if (const auto f = detect_flavour(out)) return {*f, "detected from `" + s.mpiexec + " --version`"};
  const std::string first_line = out.substr(0, out.find('\n'));
  throw AgentError{exit_code::kBadEnvironment, "cannot tell the MPI flavour from `" + s.mpiexec + " --version` (" +
                                                   quoted_value(first_line) + "); pass --mpi=openmpi|openmpi5|mpich|intel"};
}

std::string unreachable_message(const ReadinessReport& r, std::int64_t timeout_s) {
  return "workers not reachable after " + std::to_string(timeout_s) + " s: " + readiness_summary(r.hosts, 16) +
         "; check that the worker pods run gj-mpirun and that the job's headless service exists, or raise "
         "--ready-timeout";
}

// The sshd this pod runs, serving its environment to every ssh session (every rank here).
SshdSetup sshd_setup(const AgentSettings& s, const EnvMap& env) {
  SessionEnv filtered = filter_session_env(EnvList(env.begin(), env.end()));
  for (const auto& skip : filtered.skipped) {
    if (skip.loss) spdlog::warn("session environment: not passing {} to ranks: {}", skip.name, skip.reason);
    else spdlog::debug("session environment: skipping {}: {}", skip.name, skip.reason);
  }
  return plan_sshd(s, std::move(filtered.kept));
}

// MASTER_PORT must be free on the first rank's host: asked of the kernel when that host is this
// pod, else torchrun's default (nothing here can see the other pod's ports).
MasterPort choose_master_port(bool first_rank_here, const std::string& this_host) {
  if (first_rank_here)
    return {free_tcp_port(), "a free port on " + this_host + " (asked of the kernel at launch)"};
  return {kDefaultMasterPort, "torchrun's default; the first rank's host is not this pod"};
}

void check_exec_size(const MpiexecCommand& cmd) {
  std::size_t env_bytes = 0;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env_bytes += std::strlen(*e) + 1 + sizeof(char*);
  const std::string problem = exec_size_problem(cmd, env_bytes);
  if (!problem.empty()) throw AgentError{exit_code::kBadPlan, problem};
}

// The dry run's output is its result: a closed or full stdout is a failure, not exit 0.
void write_stdout(const std::string& out) {
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0)
    throw LaunchError{exit_code::kInternal, std::string("writing the dry run to stdout failed: ") + std::strerror(errno) +
                                                "; give it a writable stdout"};
}

bool should_supervise(Supervise s) {
  if (s == Supervise::On) return true;
  if (s == Supervise::Off) return false;
  return getpid() == 1;  // PID 1 must reap zombies and forward signals; otherwise exec is simpler
}

// The operator names the flavour by the hostfile variable it sets; Open MPI 4 and 5 share it,
// so `mpiexec --version` still tells them apart (Open MPI 4 when it cannot).
Flavour mpijob_flavour(const AgentSettings& s, const MpiJobEnv& me, bool dry_run) {
  if (s.mpi || !me.flavour) return choose_flavour(s, dry_run);
  const std::string from = "from the operator's " + me.hostfile_variable;
  if (*me.flavour != MpiFlavour::OpenMpi4) return {*me.flavour, from};
  try {
    if (const auto f = detect_flavour(capture_output({s.mpiexec, "--version"}, std::chrono::seconds(s.detect_timeout_s))))
      if (*f == MpiFlavour::OpenMpi4 || *f == MpiFlavour::OpenMpi5) return {*f, from + " and `mpiexec --version`"};
  } catch (const LaunchError& e) {
    if (!dry_run) throw;
  }
  return {MpiFlavour::OpenMpi4, from};
}

// The launcher of a Kubeflow MPIJob: the operator's hostfile instead of GJ_TRAINING_* and MPI_HOST.
// The JobSpec gets its master host (this pod as the workers resolve it) here, from the file.
LaunchPlan mpijob_plan(JobSpec& spec, const Invocation& inv, const EnvMap& env, MpiJobEnv& me) {
  me = mpijob_env(env);
  const std::string origin = me.hostfile + (me.hostfile_variable.empty() ? " (the operator's mount)"
                                                                          : " (from " + me.hostfile_variable + ")");
  const auto text = read_text_file(me.hostfile, "MPIJob hostfile");
  if (!text)
    throw AgentError{exit_code::kBadEnvironment,
                     "MPIJob hostfile " + quoted_value(me.hostfile) + " does not exist (K_MPI_JOB_ROLE=launcher); " +
                         "run the launcher under mpi-operator v2, which mounts it, or set the gj platform's GJ_TRAINING_*"};
  const std::vector<HostSlots> hosts = parse_mpijob_hostfile("MPIJob hostfile " + quoted_value(me.hostfile), *text);
  if (spec.pod_name.empty()) spec.pod_name = local_host_name();
  if (spec.master_host.empty()) spec.master_host = launcher_host_name(spec.pod_name, hosts);
  LaunchPlan plan = plan_mpijob(spec, origin, hosts, inv, env);
  // The launcher runs no sshd: the operator's launcher is not an ssh target (ranks it runs itself
  // are started locally by mpiexec).
  return plan;
}

}  // namespace

int run_master(const JobSpec& spec_in, const EnvMap& env, const CommandLine& cli) {
  JobSpec spec = spec_in;
  const AgentSettings& s = spec.settings;
  if (!cli.has_script)
    throw AgentError{exit_code::kUsage, "the master needs the training script: gj-mpirun [options] <script> [args]"};
  if (!spec.platform_note.empty()) spdlog::info("{}", spec.platform_note);
  Invocation inv = cli.invocation;
  inv.script = resolve_script(inv.script, env);
  const bool mpijob = spec.platform == Platform::MpiJob;
  MpiJobEnv me;
  LaunchPlan plan = mpijob ? mpijob_plan(spec, inv, env, me) : plan_master(spec, worker_hosts(spec), inv, env);
  if (!spec.platform_note.empty()) plan.notes.push_back(spec.platform_note);
  const bool own_sshd = !s.no_sshd && !mpijob;
  if (plan.command.front() == s.python) require_program(s.python, "--python/GJ_PYTHON", env);
  for (const auto& w : plan.warnings) spdlog::warn("{}", w);
  const bool first_rank_here = !plan.hosts.empty() && (plan.hosts.front().host == spec.master_host ||
                                                       (mpijob && is_this_pod(plan.hosts.front().host, spec.pod_name)));
  const CpuFactsRead cpu = read_cpu_facts();
  for (const auto& note : cpu.notes) spdlog::debug("cpu facts: {}", note);
  add_cpu_policy(plan, spec, spec.master_host, env, cpu.facts);
  if (s.rank_env) add_rank_env(plan, self_executable(), env, choose_master_port(first_rank_here, spec.master_host));

  const Flavour flavour = mpijob ? mpijob_flavour(s, me, cli.dry_run) : choose_flavour(s, cli.dry_run);
  MpiexecRequest req;
  req.flavour = flavour.flavour;
  req.mpiexec = s.mpiexec;
  req.ssh.port = s.ssh_port;
  req.ssh.connect_timeout_s = s.ssh_connect_timeout_s;
  req.hostfile_mode = s.hostfile_mode;
  req.hostfile_path = s.state_dir + "/hostfile";
  req.launcher_host = spec.master_host;

  if (cli.dry_run) {
    const MpiexecCommand cmd = build_mpiexec_command(plan, req);
    check_exec_size(cmd);
    const MasterDryRun d{plan, cmd, flavour.flavour, flavour.source, true};
    const std::string out = cli.json ? master_dry_run_json(d) : master_dry_run_text(d);
    write_stdout(out);
    return exit_code::kOk;
  }

  spdlog::info("MPI_HOSTS={}", hosts_argument(plan.hosts));
  spdlog::info("MPI_NP={} ({}, {})", plan.np, to_string(plan.layout), to_string(flavour.flavour));
  spdlog::info("cpu binding: {}", plan.binding.reason);
  spdlog::info("threads: {}", threads_summary(plan));
  SshdSetup sshd = sshd_setup(s, env);
  // Our own sshd first: the master's host is in the host list in most layouts and the
  // readiness gate waits for it like for any worker.
  if (own_sshd) start_background_sshd(sshd);
  const bool remote_hosts = plan.hosts.size() > 1 || (plan.hosts.size() == 1 && plan.hosts[0].host != spec.master_host);
  if (remote_hosts) req.ssh.identity_files = prepare_client_keys(sshd);

  if (!s.no_wait && !plan.wait_for.empty()) {
    ReadinessOptions ro;
    ro.deadline = std::chrono::seconds(s.ready_timeout_s);
    ro.port = s.ssh_port;
    if (s.ssh_check) {
      ro.ssh_login_prefix = {"ssh"};
      const auto args = ssh_client_args(req.ssh);
      ro.ssh_login_prefix.insert(ro.ssh_login_prefix.end(), args.begin(), args.end());
    }
    spdlog::info("waiting up to {} s for sshd on {} host(s)", s.ready_timeout_s, plan.wait_for.size());
    const ReadinessReport report =
        wait_until_ready(plan.wait_for, ro, [](const std::string& line) { spdlog::info("{}", line); });
    if (!report.all_ready) {
      // The exit message (and the termination log) lists at most 16 hosts; the log names every
      // one, so a job of thousands of hosts still shows each host that failed and why.
      for (const auto& h : report.hosts) {
        if (h.state != HostState::Ready) spdlog::warn("not ready: {}: {} after {} probe(s)", h.host, h.detail, h.attempts);
      }
      throw AgentError{exit_code::kWorkersUnreachable, unreachable_message(report, s.ready_timeout_s)};
    }
    spdlog::info("all {} host(s) ready after {} ms", report.hosts.size(), report.elapsed.count());
  }

  const MpiexecCommand cmd = build_mpiexec_command(plan, req);
  check_exec_size(cmd);
  if (cmd.hostfile) {
    ensure_private_dir(s.state_dir, "GJ_STATE_DIR");
    write_private_file(cmd.hostfile->path, cmd.hostfile->content, 0600);
    spdlog::info("hosts passed in hostfile {} ({} hosts)", cmd.hostfile->path, plan.hosts.size());
  }
  for (const auto& [name, value] : cmd.env) setenv(name.c_str(), value.c_str(), 1);
  spdlog::info("running: {}", shell_join(redacted_argv(cmd.argv)));
  const int status = run_job(cmd.argv, should_supervise(s.supervise));
  // Supervised, the job's end is ours to report: one line in the pod log and the pod status
  // (mpiexec's own report, when it gives one, is several lines and differs per flavour).
  if (status != 0) {
    const std::string line = "mpiexec exited with status " + std::to_string(status) + "; gj-mpirun exits with it";
    spdlog::error("{}", line);
    write_termination_message(line);
  }
  return status;
}

int run_rank(const std::vector<std::string>& args, const EnvMap& env) {
  if (args.size() < 3 || args[1] != "--")
    throw AgentError{exit_code::kUsage, std::string("usage: gj-mpirun ") + kRankExecFlag + " <spec> -- <command...>"};
  const RankEnv re = rank_environment(env, decode_rank_env_spec(args[0]), read_cpu_facts().facts);
  for (const auto& w : re.warnings) spdlog::warn("{}", w);
  for (const auto& [name, value] : re.set) ::setenv(name.c_str(), value.c_str(), 1);
  // Shell startup files of the ssh session (~/.bashrc of pyenv or conda images) may have put
  // another interpreter first in PATH: the rank runs with its pod's own PATH, which the worker
  // wrote down before it became sshd (sshd rewrites its own environment block).
  const std::string state_dir = env_value(env, "GJ_STATE_DIR").value_or(defaults::kStateDir);
  if (const auto pod_path = read_pod_path(state_dir)) ::setenv("PATH", pod_path->c_str(), 1);
  const std::vector<std::string> program(args.begin() + 2, args.end());
  // Hydra (MPICH) gives each rank its PMI connection as PMI_FD, and does not end the job when a
  // rank's program fails without MPI_Abort (sys/rank_guard.h). Open MPI sets no PMI_FD.
  if (const auto pmi = env_value(env, "PMI_FD")) {
    char* end = nullptr;
    const long fd = std::strtol(pmi->c_str(), &end, 10);
    if (*end == '\0' && fd >= 0 && fd <= INT_MAX) return run_rank_guarded(program, static_cast<int>(fd));
  }
  exec_rank(program);
}

int run_worker(const JobSpec& spec, const EnvMap& env, const CommandLine& cli) {
  const SshdSetup setup = sshd_setup(spec.settings, env);
  if (cli.dry_run) {
    const std::string out = cli.json ? worker_dry_run_json(setup) : worker_dry_run_text(setup);
    write_stdout(out);
    return exit_code::kOk;
  }
  if (const auto path = env.find("PATH"); path != env.end()) write_pod_path(setup.state_dir, path->second);
  spdlog::info("starting sshd on port {} ({} session variables)", setup.port, setup.session_env.size());
  exec_worker_sshd(setup);
}

}  // namespace gj
