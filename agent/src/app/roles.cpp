#include "roles.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "agent_error.h"
#include "quote.h"
#include "dry_run.h"
#include "exit_codes.h"
#include "horovod_alias.h"
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
#include "sys/job_monitor.h"
#include "sys/local_ranks.h"
#include "failure_summary.h"
#include "preflight.h"
#include "preflight_run.h"
#include "rank_env.h"
#include "restart_policy.h"
#include "sys/readiness.h"
#include "session_env.h"

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

Flavour choose_flavour(const AgentSettings& settings, bool dry_run) {
  if (settings.mpi) return {*settings.mpi, "from --mpi/GJ_MPI"};
  std::string out;
  spdlog::info("detecting the MPI flavour: `{} --version` (up to {} s; --mpi skips this)", settings.mpiexec,
               settings.detect_timeout_s);
  try {
    out = capture_output({settings.mpiexec, "--version"}, std::chrono::seconds(settings.detect_timeout_s));
  } catch (const LaunchError& e) {
    if (!dry_run) throw LaunchError{e.exit_code, e.message + "; pass --mpi=openmpi|openmpi5|mpich|intel to skip detection"};
    spdlog::warn("`{} --version` failed ({}); the dry run assumes Open MPI 4", settings.mpiexec, e.message);
    return {MpiFlavour::OpenMpi4, "assumed: `mpiexec --version` failed"};
  }
  if (const std::string defect = known_mpi_defect(out); !defect.empty()) spdlog::warn("{}", defect);
  if (const auto f = detect_flavour(out)) return {*f, "detected from `" + settings.mpiexec + " --version`"};
  const std::string first_line = out.substr(0, out.find('\n'));
  throw AgentError{exit_code::kBadEnvironment, "cannot tell the MPI flavour from `" + settings.mpiexec + " --version` (" +
                                                   quoted_value(first_line) + "); pass --mpi=openmpi|openmpi5|mpich|intel"};
}

std::string unreachable_message(const ReadinessReport& report, std::int64_t timeout_s) {
  return "workers not reachable after " + std::to_string(timeout_s) + " s: " + readiness_summary(report.hosts, 16) +
         "; check that the worker pods run gj-mpirun and that the job's headless service exists, or raise "
         "--ready-timeout";
}

// The sshd this pod runs, serving its environment to every ssh session (every rank here).
SshdSetup sshd_setup(const AgentSettings& settings, const EnvMap& env) {
  SessionEnv filtered = filter_session_env(EnvList(env.begin(), env.end()));
  for (const auto& skip : filtered.skipped) {
    if (skip.loss) spdlog::warn("session environment: not passing {} to ranks: {}", skip.name, skip.reason);
    else spdlog::debug("session environment: skipping {}: {}", skip.name, skip.reason);
  }
  return plan_sshd(settings, std::move(filtered.kept));
}

// MASTER_PORT must be free on the first rank's host: asked of the kernel when that host is this
// pod, else torchrun's default (nothing here can see the other pod's ports).
MasterPort choose_master_port(bool first_rank_here, const std::string& this_host) {
  if (first_rank_here)
    return {free_tcp_port(), "a free port on " + this_host + " (asked of the kernel at launch)"};
  return {kDefaultMasterPort, "torchrun's default; the first rank's host is not this pod"};
}

std::size_t environment_bytes(const EnvMap& env) {
  std::size_t bytes = 0;
  for (const auto& [name, value] : env) bytes += name.size() + value.size() + 2 + sizeof(char*);
  return bytes;
}

void check_exec_size(const MpiexecCommand& cmd, const EnvMap& env) {
  const std::string problem = exec_size_problem(cmd, environment_bytes(env));
  if (!problem.empty()) throw AgentError{exit_code::kBadPlan, problem};
}

// The dry run's output is its result: a closed or full stdout is a failure, not exit 0.
void write_stdout(const std::string& out) {
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0)
    throw LaunchError{exit_code::kInternal, std::string("writing the dry run to stdout failed: ") + std::strerror(errno) +
                                                "; give it a writable stdout"};
}

bool should_supervise(Supervise mode) {
  if (mode == Supervise::On) return true;
  if (mode == Supervise::Off) return false;
  return getpid() == 1;  // PID 1 must reap zombies and forward signals; otherwise exec is simpler
}

// The operator names the flavour by the hostfile variable it sets; Open MPI 4 and 5 share it,
// so `mpiexec --version` still tells them apart (Open MPI 4 when it cannot).
Flavour mpijob_flavour(const AgentSettings& settings, const MpiJobEnv& mpijob, bool dry_run) {
  if (settings.mpi || !mpijob.flavour) return choose_flavour(settings, dry_run);
  const std::string from = "from the operator's " + mpijob.hostfile_variable;
  if (*mpijob.flavour != MpiFlavour::OpenMpi4) return {*mpijob.flavour, from};
  try {
    if (const auto f = detect_flavour(capture_output({settings.mpiexec, "--version"}, std::chrono::seconds(settings.detect_timeout_s))))
      if (*f == MpiFlavour::OpenMpi4 || *f == MpiFlavour::OpenMpi5) return {*f, from + " and `mpiexec --version`"};
  } catch (const LaunchError& e) {
    if (!dry_run) throw;
  }
  return {MpiFlavour::OpenMpi4, from};
}

// The launcher of a Kubeflow MPIJob: the operator's hostfile instead of GJ_TRAINING_* and MPI_HOST.
// The JobSpec gets its master host (this pod as the workers resolve it) here, from the file.
// The launcher is no ssh target (mpiexec starts its ranks locally), but under Open MPI 5: see
// launcher_is_ssh_target.
LaunchPlan mpijob_plan(JobSpec& spec, const Invocation& inv, const EnvMap& env, const MpiJobEnv& mpijob) {
  const std::string origin = mpijob.hostfile + (mpijob.hostfile_variable.empty() ? " (the operator's mount)"
                                                                                : " (from " + mpijob.hostfile_variable + ")");
  const auto text = read_text_file(mpijob.hostfile, "MPIJob hostfile");
  if (!text)
    throw AgentError{exit_code::kBadEnvironment,
                     "MPIJob hostfile " + quoted_value(mpijob.hostfile) + " does not exist (K_MPI_JOB_ROLE=launcher); " +
                         "run the launcher under mpi-operator v2, which mounts it, or set the gj platform's GJ_TRAINING_*"};
  const std::vector<HostSlots> hosts = parse_mpijob_hostfile("MPIJob hostfile " + quoted_value(mpijob.hostfile), *text);
  if (spec.pod_name.empty()) spec.pod_name = local_host_name();
  if (spec.master_host.empty()) spec.master_host = launcher_host_name(spec.pod_name, hosts);
  return plan_mpijob(spec, origin, hosts, inv, env);
}

// What the master's steps share: the job as planned.
struct MasterJob {
  JobSpec spec;
  LaunchPlan plan;
  bool mpijob = false;
  MpiJobEnv mpijob_env;
};

// Step 1, plan: the script, the hosts, np, the rank environment and the CPU policy.
MasterJob plan_job(const JobSpec& spec, const EnvMap& env, const CommandLine& cli) {
  if (!cli.has_script)
    throw AgentError{exit_code::kUsage, "the master needs the training script: gj-mpirun [options] <script> [args]"};
  MasterJob job{spec, {}, spec.platform == Platform::MpiJob, {}};
  const AgentSettings& settings = job.spec.settings;
  if (!job.spec.platform_note.empty()) spdlog::info("{}", job.spec.platform_note);
  Invocation inv = cli.invocation;
  inv.script = resolve_script(inv.script, env);
  if (job.mpijob) job.mpijob_env = mpijob_env(env);
  job.plan = job.mpijob ? mpijob_plan(job.spec, inv, env, job.mpijob_env)
                        : plan_master(job.spec, worker_hosts(job.spec), inv, env);
  if (!job.spec.platform_note.empty()) job.plan.notes.push_back(job.spec.platform_note);
  if (job.plan.command.front() == settings.python) require_program(settings.python, "--python/GJ_PYTHON", env);

  if (settings.horovod_alias != HorovodAlias::Off) {
    // The job's interpreter says where gj's alias folder is and whether a real Horovod is there.
    require_program(settings.python, "--python/GJ_PYTHON", env);
    const auto argv = horovod_alias_probe_argv(settings.python);
    add_horovod_alias(job.plan, settings.horovod_alias,
                      parse_horovod_alias_probe(settings.python, capture_output(argv, std::chrono::seconds(30))), env,
                      settings.python);
    spdlog::info("{}", job.plan.notes.back());
  }

  const CpuFactsRead cpu = read_cpu_facts();
  for (const auto& note : cpu.notes) spdlog::debug("cpu facts: {}", note);
  add_cpu_policy(job.plan, job.spec, job.spec.master_host, env, cpu.facts);
  if (settings.rank_env && !job.plan.hosts.empty()) {
    const std::string& first = job.plan.hosts.front().host;
    const bool first_rank_here = first == job.spec.master_host || (job.mpijob && is_this_pod(first, job.spec.pod_name));
    const std::string rendezvous = job.mpijob ? rendezvous_host(first, job.spec.pod_name, job.spec.master_host) : first;
    add_rank_env(job.plan, self_executable(), env, choose_master_port(first_rank_here, job.spec.master_host), rendezvous);
    add_nccl_transport_log(job.plan, job.spec.settings);
  }
  for (const auto& w : job.plan.warnings) spdlog::warn("{}", w);
  return job;
}

MpiexecRequest mpiexec_request(const MasterJob& job, const Flavour& flavour) {
  const AgentSettings& settings = job.spec.settings;
  MpiexecRequest req;
  req.flavour = flavour.flavour;
  req.mpiexec = settings.mpiexec;
  req.ssh.port = settings.ssh_port;
  req.ssh.connect_timeout_s = settings.ssh_connect_timeout_s;
  req.hostfile_mode = settings.hostfile_mode;
  req.hostfile_path = settings.state_dir + "/hostfile";
  req.launcher_host = job.spec.master_host;
  return req;
}

// The first attempt's command, as launch() builds it (its restart variables included).
int print_dry_run(const MasterJob& job, const MpiexecRequest& req, const Flavour& flavour, bool json, const EnvMap& env) {
  const LaunchPlan plan = plan_for_attempt(job.plan, 0, job.spec.settings.max_restarts);
  const MpiexecCommand cmd = build_mpiexec_command(plan, req);
  check_exec_size(cmd, env);
  MasterDryRun d{plan, cmd, flavour.flavour, flavour.source, true};
  d.preflight = job.spec.settings.no_wait ? std::vector<std::string>{"preflight: GPU and network checks skipped with the readiness gate (--no-wait)"}
                                          : preflight_dry_run_lines(job.plan, job.spec.settings);
  write_stdout(json ? master_dry_run_json(d) : master_dry_run_text(d));
  return exit_code::kOk;
}

void log_plan(const MasterJob& job, const Flavour& flavour) {
  spdlog::info("MPI_HOSTS={}", hosts_argument(job.plan.hosts));
  spdlog::info("MPI_NP={} ({}, {})", job.plan.np, to_string(job.plan.layout), to_string(flavour.flavour));
  spdlog::info("cpu binding: {}", job.plan.binding.reason);
  spdlog::info("threads: {}", threads_summary(job.plan));
}

// An MPIJob launcher is no ssh target, except where it runs ranks under Open MPI 5: PRRTE does
// not take the operator's name for it (<launcher>.<job>.<ns>.svc) as the local host and starts
// its daemon there over ssh ("Connection refused", seen with Open MPI 5.0.7); Open MPI 4 and
// hydra start the launcher's own ranks locally.
bool launcher_is_ssh_target(const MasterJob& job, MpiFlavour flavour) {
  if (flavour != MpiFlavour::OpenMpi5) return false;
  return std::any_of(job.plan.hosts.begin(), job.plan.hosts.end(),
                     [&](const HostSlots& h) { return is_this_pod(h.host, job.spec.pod_name); });
}

// Step 3, keys and sshd: our own sshd first (the master's host is in the host list in most
// layouts and the gate waits for it like for any worker), then the client keys for the others.
void start_sshd_and_copy_keys(const MasterJob& job, const EnvMap& env, MpiexecRequest& req) {
  const AgentSettings& settings = job.spec.settings;
  const SshdSetup sshd = sshd_setup(settings, env);
  const auto& hosts = job.plan.hosts;
  if (!settings.no_sshd && (!job.mpijob || launcher_is_ssh_target(job, req.flavour))) start_background_sshd(sshd);
  const bool remote_hosts = hosts.size() > 1 || (hosts.size() == 1 && hosts[0].host != job.spec.master_host);
  if (remote_hosts) req.ssh.identity_files = prepare_client_keys(sshd);
}

// Step 4, the gate: every host's sshd accepts connections (and logins with --ssh-check).
void wait_for_hosts(const MasterJob& job, const MpiexecRequest& req) {
  const AgentSettings& settings = job.spec.settings;
  if (settings.no_wait || job.plan.wait_for.empty()) return;
  ReadinessOptions options;
  options.deadline = std::chrono::seconds(settings.ready_timeout_s);
  options.port = settings.ssh_port;
  options.ssh_identification = true;  // a healthy worker logs no kex_exchange_identification error
  if (settings.ssh_check) {
    options.ssh_login_prefix = {"ssh"};
    const auto args = ssh_client_args(req.ssh);
    options.ssh_login_prefix.insert(options.ssh_login_prefix.end(), args.begin(), args.end());
  }
  spdlog::info("waiting up to {} s for sshd on {} host(s)", settings.ready_timeout_s, job.plan.wait_for.size());
  const ReadinessReport report =
      wait_until_ready(job.plan.wait_for, options, [](const std::string& line) { spdlog::info("{}", line); });
  if (!report.all_ready) {
    // The exit message (and the termination log) lists at most 16 hosts; the log names every
    // one, so a job of thousands of hosts still shows each host that failed and why.
    for (const auto& h : report.hosts)
      if (h.state != HostState::Ready) spdlog::warn("not ready: {}: {} after {} probe(s)", h.host, h.detail, h.attempts);
    throw AgentError{exit_code::kWorkersUnreachable, unreachable_message(report, settings.ready_timeout_s)};
  }
  spdlog::info("all {} host(s) ready after {} ms", report.hosts.size(), report.elapsed.count());
}

// Step 4b, pre-flight checks (preflight_run.h): every pod's GPUs against its limit, then the
// network between the pods. They need every pod's sshd, so they run only after the gate.
// Returns the pods' RDMA facts for the NCCL transport report (log_nccl_transport) at the job's end.
std::vector<PodRdma> preflight_checks(const MasterJob& job, const MpiexecRequest& req) {
  const AgentSettings& settings = job.spec.settings;
  if (settings.no_wait) {
    spdlog::debug("pre-flight checks skipped: --no-wait skipped the readiness gate they need");
    return {};
  }
  PreflightPods pods;
  pods.ssh_prefix = {"ssh"};
  const auto args = ssh_client_args(req.ssh);
  pods.ssh_prefix.insert(pods.ssh_prefix.end(), args.begin(), args.end());
  pods.self = self_executable();
  for (std::size_t i = 0; i < job.plan.hosts.size(); ++i) {
    const std::string& h = job.plan.hosts[i].host;
    if (h == job.spec.master_host || (job.mpijob && is_this_pod(h, job.spec.pod_name))) pods.local_index = i;
  }
  return run_preflight(job.plan, settings, pods);
}

// This pod's name as the rank wrappers report it to the job monitor (the platform's
// GJ_TRAINING_POD_NAME, else the host name): the master names its own pod the same way.
std::string pod_name(const EnvMap& env) {
  const auto pod = env_value(env, "GJ_TRAINING_POD_NAME");
  return pod && !pod->empty() ? *pod : local_host_name();
}

// The rank wrappers name their pod by GJ_TRAINING_POD_NAME ("w-0"), the plan and the pre-flight
// facts by host ("w-0.job"): the NCCL summaries take the plan's name, so that the transport
// report matches them with the pods' RDMA facts and names pods as the other checks do.
std::vector<std::pair<std::string, std::string>> summaries_by_host(std::vector<std::pair<std::string, std::string>> summaries,
                                                                    const LaunchPlan& plan) {
  for (auto& [pod, line] : summaries)
    for (const auto& h : plan.hosts)
      if (h.host.rfind(pod + ".", 0) == 0) {
        pod = h.host;
        break;
      }
  return summaries;
}

// Step 5, launch: the hostfile when the plan uses one, then mpiexec with the environment made
// explicit (this process's, plus what the flavour needs in mpiexec's own), exec'd or supervised.
// With the rank wrappers (the rank environment on), the job monitor listens and mpiexec is
// supervised (unless --no-supervise asks for exec in place): a rank that fails ends the job,
// and the summary comes at the end. attempt: 0 first, then one per restart (restart_policy.h);
// its ranks get GJ_RESTART_COUNT and torchrun's restart variables.
// rdma: the pods' RDMA facts from the pre-flight checks, for the NCCL transport report.
AttemptOutcome launch(const MasterJob& job, const MpiexecRequest& req, const EnvMap& env, std::int64_t attempt,
                      const std::vector<PodRdma>& rdma) {
  const AgentSettings& settings = job.spec.settings;
  std::optional<JobMonitor> monitor;
  LaunchPlan plan = plan_for_attempt(job.plan, attempt, settings.max_restarts);
  if (plan.rank_env && settings.supervise != Supervise::Off) {
    MonitorOptions options;
    options.master_pod = pod_name(env);
    options.ssh_port = settings.ssh_port;
    options.view.stall_ms = settings.stall_ms;
    options.view.hang_timeout_ms = settings.hang_timeout_s * 1000;
    options.view.repeat_ms = std::max<std::int64_t>(settings.stall_ms, 30000);
    options.view.status_ms = settings.status_interval_s * 1000;
    options.info = [](const std::string& line) { spdlog::info("{}", line); };
    options.metrics_port = settings.metrics_port;
    monitor.emplace(options);
    plan.command = with_rank_monitor(plan.command, monitor->endpoint());
  }
  // A restart needs this process after the job: supervise it even where exec would do.
  const bool restarts_left = attempt < settings.max_restarts;
  const MpiexecCommand cmd = build_mpiexec_command(plan, req);
  check_exec_size(cmd, env);
  if (cmd.hostfile) {
    ensure_private_dir(settings.state_dir, "GJ_STATE_DIR");
    write_private_file(cmd.hostfile->path, cmd.hostfile->content, 0600);
    spdlog::info("hosts passed in hostfile {} ({} hosts)", cmd.hostfile->path, job.plan.hosts.size());
  }
  const Environment environment = environment_block(env, cmd.env);
  spdlog::info("running: {}", shell_join(redacted_argv(cmd.argv)));
  JobEnd end;
  // Once every rank was asked to stop, whatever follows (a clean end, a rank that fails while
  // saving, the held signal) ends the job: a stopped job is never restarted.
  bool stop_asked = false;
  const auto ended = [&stop_asked](AttemptOutcome o) {
    if (stop_asked && o.end != AttemptEnd::Succeeded) o.end = AttemptEnd::Stopped;
    return o;
  };
  if (monitor) {
    end.requested = &monitor->end_requested();
    end.stop_grace = std::chrono::seconds(settings.stop_grace_s);
    end.stop = [&monitor, &settings, &stop_asked] {
      stop_asked = true;
      const bool polled = monitor->request_stop("gj-mpirun received a termination signal (the pod is being deleted)");
      if (polled)
        spdlog::warn("termination signal: every rank was asked to stop; mpiexec gets the signal in {} s (GJ_STOP_GRACE) "
                     "unless the job ends first",
                     settings.stop_grace_s);
      return polled;
    };
  }
  const bool supervise = monitor.has_value() || restarts_left || should_supervise(settings.supervise);
  end.keep_owned = restarts_left;  // the master's sshd serves the next attempt
  const int status = run_job(cmd.argv, supervise, &environment, supervise ? &end : nullptr);
  if (monitor) {
    const JobWatch watch = monitor->finish(std::chrono::milliseconds(1500));
    log_nccl_transport(summaries_by_host(watch.nccl_summaries(), job.plan), rdma);
    for (const auto& line : monitor->end_lines()) spdlog::info("{}", line);
    // A job we passed a termination signal to (the pod deleted) before any rank failed: its ranks
    // died of that signal, which is no rank failure to report; the status is 128+N below.
    const bool report_failure = end.terminated_by == 0 && watch.failing();
    const auto up = report_failure ? monitor->pods_still_up(watch) : std::set<std::string>{};
    if (const auto report = report_failure ? watch.report(up) : std::nullopt) {
      for (const auto& line : render_failure_summary(*report)) spdlog::error("{}", line);
      const std::string short_form = "rank failure: " + failure_short_form(*report);
      write_termination_message_to(settings.termination_log, short_form);
      if (!restarts_left || stop_asked)
        spdlog::error("gj-mpirun exits with {} (a rank failed; mpiexec's own status was {})", exit_code::kRankFailed, status);
      return ended({AttemptEnd::RankFailed, exit_code::kRankFailed, short_form});
    }
  }
  // Supervised, the job's end is ours to report: one line in the pod log and the pod status
  // (mpiexec's own report, when it gives one, is several lines and differs per flavour).
  if (status == 0) return {AttemptEnd::Succeeded, 0, ""};
  const std::string why = "mpiexec exited with status " + std::to_string(status);
  const std::string line = why + "; gj-mpirun exits with it";
  const bool stopped = end.terminated_by != 0 || stop_asked;  // the pod is being stopped: no restart
  if (!restarts_left || stopped) spdlog::error("{}", line);
  write_termination_message_to(settings.termination_log, line);
  if (stopped) return {AttemptEnd::Stopped, status, "the job was asked to stop (a termination signal)"};
  return {AttemptEnd::JobFailed, status, why};
}

// Steps 4 and 5 once per attempt: the gate (a worker pod the platform re-created comes back
// under its name) and the pre-flight checks (a re-created pod may sit on another node), then the
// job; restart_policy.h decides whether another attempt follows.
int run_attempts(const MasterJob& job, const MpiexecRequest& req, const EnvMap& env) {
  const std::int64_t max_restarts = job.spec.settings.max_restarts;
  for (std::int64_t attempt = 0;; ++attempt) {
    wait_for_hosts(job, req);
    const std::vector<PodRdma> rdma = preflight_checks(job, req);
    const auto started = std::chrono::steady_clock::now();
    const AttemptOutcome outcome = launch(job, req, env, attempt, rdma);
    const auto took =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
    const RestartDecision next = decide_restart(outcome, attempt, max_restarts, took);
    if (!next.restart) {
      if (!next.line.empty()) spdlog::error("{}", next.line);
      return outcome.status;
    }
    spdlog::warn("{}", next.line);
  }
}

}  // namespace

int run_master(const JobSpec& spec, const EnvMap& env, const CommandLine& cli) {
  const MasterJob job = plan_job(spec, env, cli);
  const AgentSettings& settings = job.spec.settings;
  const Flavour flavour = job.mpijob ? mpijob_flavour(settings, job.mpijob_env, cli.dry_run) : choose_flavour(settings, cli.dry_run);
  MpiexecRequest req = mpiexec_request(job, flavour);
  if (cli.dry_run) return print_dry_run(job, req, flavour, cli.json, env);
  log_plan(job, flavour);
  start_sshd_and_copy_keys(job, env, req);
  return run_attempts(job, req, env);
}

int run_rank(const std::vector<std::string>& args, const EnvMap& env) {
  const RankExecArgs rank_args = parse_rank_exec_args(args);
  const RankEnvSpec spec = decode_rank_env_spec(rank_args.spec);
  const RankEnv rank = rank_environment(env, spec, read_cpu_facts().facts);
  for (const auto& w : rank.warnings) spdlog::warn("{}", w);
  EnvMap program_env = env;
  for (const auto& [name, value] : rank.set) program_env[name] = value;
  // Shell startup files of the ssh session (~/.bashrc of pyenv or conda images) may have put
  // another interpreter first in PATH: the rank runs with its pod's own PATH, which the worker
  // wrote down before it became sshd (sshd rewrites its own environment block).
  const AgentSettings settings = resolve_settings_of(env, {"GJ_STATE_DIR", "GJ_TERMINATION_LOG"});
  if (const auto pod_path = read_pod_path(settings.state_dir)) program_env["PATH"] = *pod_path;
  // NCCL opens NCCL_DEBUG_FILE itself and writes to stdout when it cannot: the folder must exist.
  const bool nccl_log = std::any_of(rank.set.begin(), rank.set.end(), [](const auto& v) { return v.first == "NCCL_DEBUG_FILE"; });
  if (nccl_log) {
    try {
      ensure_private_dir(spec.nccl_log_dir, "the NCCL debug folder");
    } catch (const LaunchError& e) {
      spdlog::warn("NCCL's transport is not logged for the master: {}", e.message);
      for (const char* name : {"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"}) program_env.erase(name);
    }
  }
  RankGuard guard;
  guard.argv = rank_args.command;
  guard.monitor = rank_args.monitor;
  guard.termination_log = settings.termination_log;
  guard.state_dir = settings.state_dir;
  // A GPU job (the plan set an NCCL folder: preflight.h): the program's GPU use for the metrics.
  if (!spec.nccl_log_dir.empty()) guard.gpu_use_command = {self_executable(), kGpuUseFlag};
  if (nccl_log) {  // still set: the folder exists
    const auto it = program_env.find("NCCL_DEBUG_FILE");
    if (it != program_env.end()) guard.nccl_debug_file = it->second;
  }
  const auto number = [&](const char* name) {
    const auto v = env_value(program_env, name);
    return v && !v->empty() && v->size() < 10 && v->find_first_not_of("0123456789") == std::string::npos ? std::stoi(*v) : -1;
  };
  guard.rank = number("RANK");
  guard.size = number("WORLD_SIZE");
  guard.local_rank = number("LOCAL_RANK");
  guard.pod = pod_name(env);
  // Hydra (MPICH) gives each rank its PMI connection as PMI_FD (sys/rank_guard.h). Open MPI sets no PMI_FD.
  if (const auto pmi = env_value(env, "PMI_FD")) {
    char* end = nullptr;
    const long fd = std::strtol(pmi->c_str(), &end, 10);
    if (*end == '\0' && fd >= 0 && fd <= INT_MAX) guard.pmi_fd = static_cast<int>(fd);
  }
  guard.environment = environment_block(program_env, {});
  return run_rank_guarded(guard);
}

int run_worker(const JobSpec& spec, const EnvMap& env, const CommandLine& cli) {
  const SshdSetup setup = sshd_setup(spec.settings, env);
  if (cli.dry_run) {
    write_stdout(cli.json ? worker_dry_run_json(setup) : worker_dry_run_text(setup));
    return exit_code::kOk;
  }
  if (const auto path = env_value(env, "PATH")) write_pod_path(setup.state_dir, *path);
  spdlog::info("starting sshd on port {} ({} session variables)", setup.port, setup.session_env.size());
  if (spec.settings.stop_grace_s == 0) exec_worker_sshd(setup);
  // A termination signal (the pod being deleted) first asks this pod's rank wrappers to stop the
  // job (they tell the master, which tells every rank); sshd gets it once they are gone, or
  // GJ_STOP_GRACE later (docs/agent.md "Stop requests").
  const std::string state_dir = spec.settings.state_dir;
  const std::int64_t grace = spec.settings.stop_grace_s;
  JobEnd end;
  end.stop_grace = std::chrono::seconds(grace);
  end.stop = [state_dir, grace] {
    const int n = signal_local_ranks(state_dir);
    if (n > 0)
      spdlog::warn("termination signal: asked this pod's {} rank(s) to stop the job; sshd gets the signal when they have "
                   "left, at most {} s from now (GJ_STOP_GRACE)",
                   n, grace);
    return n > 0;
  };
  end.stop_done = [state_dir] { return local_ranks_alive(state_dir) == 0; };
  return run_worker_sshd(setup, &end);
}

}  // namespace gj
