#include "text.h"
#include "plan.h"

#include <algorithm>
#include <climits>

#include "agent_error.h"
#include "quote.h"
#include "exit_codes.h"
#include "sshd_config.h"

namespace gj {
namespace {

std::int64_t checked_np(std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) {
  std::int64_t ab = 0;
  std::int64_t cd = 0;
  std::int64_t sum = 0;
  if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(c, d, &cd) || __builtin_add_overflow(ab, cd, &sum) ||
      sum > INT_MAX)
    throw AgentError{exit_code::kBadPlan, "MPI_NP would exceed " + std::to_string(INT_MAX) +
                                              " processes; check the replica counts and CPU/GPU limits"};
  return sum;
}

std::string zero_slots(const char* var, const std::string& text, const char* who) {
  return quoted_setting(var, text) + " gives 0 slots (CPU limits are floored to whole CPUs and are the " +
         "slot count when no role uses GPUs); give the " + who + " at least 1 CPU";
}

}  // namespace

const char* to_string(Layout l) {
  switch (l) {
    case Layout::BothCpu: return "master+workers on CPU";
    case Layout::BothGpu: return "master+workers on GPU";
    case Layout::WorkersOnly: return "workers only (GPU workers, CPU master)";
    case Layout::MasterOnly: return "master only (GPU master, CPU or no workers)";
    case Layout::Hostfile: return "hosts and slots from the MPIJob hostfile";
  }
  return "?";
}

std::string hosts_argument(const std::vector<HostSlots>& hosts) {
  std::string out;
  out.reserve(hosts.size() * 32);
  for (const auto& h : hosts) {
    if (!out.empty()) out += ',';
    out += h.host;
    out += ':';
    out += std::to_string(h.slots);
  }
  return out;
}

std::vector<std::string> rank_command(const Invocation& inv, const std::string& python) {
  std::vector<std::string> cmd;
  if (ends_with(inv.script, ".py")) cmd.push_back(python);
  cmd.push_back(inv.script);
  cmd.insert(cmd.end(), inv.script_args.begin(), inv.script_args.end());
  return cmd;
}

LaunchPlan plan_master(const JobSpec& spec, const std::optional<HostList>& workers, const Invocation& inv,
                       const EnvMap& env) {
  LaunchPlan plan;
  const bool master_gpu = spec.master.gpu > 0;
  const bool worker_gpu = spec.worker.gpu > 0;
  if (!master_gpu && !worker_gpu) plan.layout = Layout::BothCpu;
  else if (master_gpu && worker_gpu) plan.layout = Layout::BothGpu;
  else if (!master_gpu) plan.layout = Layout::WorkersOnly;
  else plan.layout = Layout::MasterOnly;

  const bool cpu_slots = plan.layout == Layout::BothCpu;
  const bool master_used = plan.layout != Layout::WorkersOnly;
  const bool workers_used = plan.layout != Layout::MasterOnly;
  const std::int64_t master_slots = cpu_slots ? spec.master.cpu : spec.master.gpu;
  const std::int64_t worker_slots = cpu_slots ? spec.worker.cpu : spec.worker.gpu;
  const std::int64_t worker_replicas = workers_used ? spec.worker.replicas : 0;
  const std::string origin = workers ? workers->origin : "MPI_HOST";

  if (master_used) {
    const std::string problem = dns_name_problem(spec.master_host);
    if (!problem.empty())
      throw AgentError{exit_code::kBadEnvironment,
                       "master host " + quoted_value(spec.master_host) + " (GJ_TRAINING_POD_NAME.GJ_TRAINING_VC_JOB_NAME or " +
                           "--master-host/GJ_MASTER_HOST) is not a valid DNS host name (" + problem +
                           "); fix the pod/job name or set GJ_MASTER_HOST"};
    if (master_slots == 0)
      throw AgentError{exit_code::kBadPlan, zero_slots("GJ_TRAINING_MASTER_CPU_LIMIT", spec.master.cpu_text, "master")};
    plan.hosts.push_back({spec.master_host, master_slots});
  }

  const std::vector<std::string> no_hosts;
  const std::vector<std::string>& worker_hosts = workers ? workers->hosts : no_hosts;
  if (workers_used) {
    const auto n = static_cast<std::int64_t>(worker_hosts.size());
    if (worker_replicas > 0 && n == 0)
      throw AgentError{exit_code::kBadEnvironment,
                       "GJ_TRAINING_WORKER_REPLICAS=" + std::to_string(worker_replicas) + " but " +
                           (workers ? origin + " lists no hosts" : std::string("MPI_HOST is not set")) +
                           "; enable Volcano's mpi/svc plugins or pass --hosts-file"};
    if (n != worker_replicas)
      throw AgentError{exit_code::kBadEnvironment,
                       origin + " lists " + std::to_string(n) + " hosts but GJ_TRAINING_WORKER_REPLICAS=" +
                           std::to_string(worker_replicas) +
                           "; every worker replica needs exactly one host entry (do not set a fixed hostname "
                           "in the worker template)"};
    if (worker_replicas > 0 && worker_slots == 0)
      throw AgentError{exit_code::kBadPlan, zero_slots("GJ_TRAINING_WORKER_CPU_LIMIT", spec.worker.cpu_text, "workers")};
    if (master_used && std::find(worker_hosts.begin(), worker_hosts.end(), spec.master_host) != worker_hosts.end())
      throw AgentError{exit_code::kBadEnvironment, origin + " lists the master host " + quoted_value(spec.master_host) +
                                                       "; the worker list must not include the master"};
    plan.hosts.reserve(plan.hosts.size() + worker_hosts.size());
    for (const auto& h : worker_hosts) plan.hosts.push_back({h, worker_slots});
  } else if (!worker_hosts.empty() || spec.worker.replicas > 0) {
    plan.warnings.push_back("the master has GPUs and the workers have none: following the platform example, all "
                            "ranks run on the master and the " +
                            std::to_string(spec.worker.replicas) + " worker(s) stay idle");
  }
  if (plan.layout == Layout::BothGpu && spec.worker.replicas > 0 && spec.master.gpu != spec.worker.gpu)
    plan.warnings.push_back("GJ_TRAINING_MASTER_GPU_LIMIT=" + std::to_string(spec.master.gpu) +
                            " differs from GJ_TRAINING_WORKER_GPU_LIMIT=" + std::to_string(spec.worker.gpu) +
                            " (the platform requires equal GPUs per node); following the platform example, each "
                            "host gets its own GPU count as slots");

  plan.np = checked_np(master_used ? spec.master.replicas : 0, master_slots, worker_replicas, worker_slots);
  if (plan.np <= 0)
    throw AgentError{exit_code::kBadPlan, "MPI_NP=" + std::to_string(plan.np) + " (" + to_string(plan.layout) +
                                              ", GJ_TRAINING_WORKER_REPLICAS=" +
                                              std::to_string(spec.worker.replicas) +
                                              "); the job needs at least one process: add workers or GPUs"};

  for (const auto& h : plan.hosts)
    if (!(h.host == spec.master_host && spec.settings.no_sshd)) plan.wait_for.push_back(h.host);
  plan.command = rank_command(inv, spec.settings.python);
  plan.mpi_args = inv.mpi_args;
  ExportSelection sel = select_exports(env, spec.settings.exports, spec.settings.default_exports);
  plan.exports = std::move(sel.vars);
  plan.warnings.insert(plan.warnings.end(), sel.warnings.begin(), sel.warnings.end());
  return plan;
}

void add_cpu_policy(LaunchPlan& plan, const JobSpec& spec, const std::string& this_host, const EnvMap& env,
                    const CpuFacts& this_pod) {
  const bool volcano = spec.platform == Platform::Volcano;
  std::optional<std::int64_t> this_allocation =
      pod_cpu_allocation(volcano ? spec.master.cpu : 0, this_pod.quota_cpus);
  bool ranks_elsewhere = false;
  plan.pod_cpus.clear();
  plan.pod_cpus.reserve(plan.hosts.size());
  for (const auto& h : plan.hosts) {
    const bool here = h.host == this_host;
    ranks_elsewhere = ranks_elsewhere || !here;
    if (here) plan.pod_cpus.push_back(this_allocation.value_or(0));
    else plan.pod_cpus.push_back(volcano && spec.worker.cpu > 0 ? spec.worker.cpu : 0);
  }
  plan.binding = choose_binding(plan.mpi_args, env, this_pod, this_allocation, ranks_elsewhere);
  plan.user_threads = env_value(env, "OMP_NUM_THREADS");
  if (plan.user_threads || spec.settings.rank_env || plan.hosts.empty()) return;
  const std::int64_t first = planned_threads(plan, 0);
  for (std::size_t i = 0; i < plan.hosts.size(); ++i) {
    if (planned_threads(plan, i) != first || first == 0) {
      plan.warnings.push_back("OMP_NUM_THREADS is left unset: the threads per rank differ per host (or are not known "
                              "here) and --no-rank-env leaves the ranks without gj-mpirun's wrapper that sets it per "
                              "pod; set OMP_NUM_THREADS yourself");
      return;
    }
  }
  plan.exports.push_back({"OMP_NUM_THREADS", std::to_string(first)});
}

std::int64_t planned_threads(const LaunchPlan& plan, std::size_t i) {
  if (i >= plan.pod_cpus.size() || plan.pod_cpus[i] <= 0) return 0;
  return threads_per_rank(plan.pod_cpus[i], plan.hosts[i].slots);
}

void add_rank_env(LaunchPlan& plan, const std::string& self, const EnvMap& env, const MasterPort& port,
                  const std::string& first_host) {
  if (plan.hosts.empty()) return;
  std::vector<std::int64_t> slots;
  slots.reserve(plan.hosts.size());
  for (const auto& h : plan.hosts) slots.push_back(h.slots);
  plan.rank_env = master_rank_env_spec(slots, first_host, env, port.port, port.how, &plan.rank_env_origin);
  plan.rank_env->cpus = plan.pod_cpus;
  plan.rank_env->cpus.resize(plan.hosts.size(), 0);
  plan.command = rank_exec_command(self, *plan.rank_env, plan.command);
}

SshdSetup plan_sshd(const AgentSettings& settings, std::vector<std::pair<std::string, std::string>> session_env) {
  SshdSetup setup;
  setup.sshd_path = settings.sshd;
  setup.ssh_keygen = settings.ssh_keygen;
  setup.state_dir = settings.state_dir;
  setup.port = settings.ssh_port;
  setup.ssh_dir = settings.ssh_dir;
  setup.session_env = std::move(session_env);
  return setup;
}

std::vector<std::string> worker_sshd_argv(const SshdSetup& setup) {
  return sshd_argv(setup.sshd_path, sshd_config_path(setup.state_dir));
}

}  // namespace gj
