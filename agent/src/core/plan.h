// Pure planning: JobSpec (+ worker hosts, command line, master env) -> what to launch.
// Follows the platform's example launch script case by case (its four CPU/GPU cases); see plan.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cpu_binding.h"
#include "env_forwarding.h"
#include "env_map.h"
#include "hosts.h"
#include "job_spec.h"
#include "rank_env.h"
#include "sshd_config.h"

namespace gj {

struct HostSlots {
  std::string host;
  std::int64_t slots = 0;
  bool operator==(const HostSlots& o) const { return host == o.host && slots == o.slots; }
};

// The four cases of the platform example.
enum class Layout {
  BothCpu,      // no GPUs anywhere: master + workers, CPU limits are slots
  BothGpu,      // GPUs on both: master + workers, GPU limits are slots
  WorkersOnly,  // master CPU, workers GPU: ranks on workers only
  MasterOnly,   // master GPU, workers CPU or none: ranks on the master only
  Hostfile,     // Kubeflow MPIJob: hosts and slots from the operator's hostfile
};
const char* to_string(Layout l);

// What the command line asked to run.
struct Invocation {
  std::string script;                    // path (main makes it absolute) or program name
  std::vector<std::string> script_args;  // passed through unchanged
  std::vector<std::string> mpi_args;     // user's mpiexec arguments, before the script
};

struct LaunchPlan {
  Layout layout = Layout::BothCpu;
  std::vector<HostSlots> hosts;        // master first (when used), then workers in order
  std::int64_t np = 0;
  std::vector<std::string> wait_for;   // hosts the readiness gate waits for (their sshd)
  std::vector<std::string> command;    // what every rank runs: [python] script args...
  std::vector<std::string> mpi_args;
  std::vector<ForwardedVar> exports;
  std::vector<std::string> warnings;   // logged, never fatal
  std::vector<std::string> notes;      // where values came from, for --dry-run
  // Set when every rank gets torchrun's variables (command then starts with `gj-mpirun --rank-exec`).
  std::optional<RankEnvSpec> rank_env;
  RankEnvOrigin rank_env_origin;
  // CPUs (add_cpu_policy): the binding chosen, and per host (hosts order) the pod's CPU
  // allocation as the master knows it (0: not known here; the rank reads its own pod's quota).
  BindingChoice binding;
  std::vector<std::int64_t> pod_cpus;
  std::optional<std::string> user_threads;  // OMP_NUM_THREADS set on the master: it wins
};

// How the master chose MASTER_PORT (a side effect: roles.cpp asks the kernel for a free port).
struct MasterPort {
  int port = kDefaultMasterPort;
  std::string how;  // "a free port on <host> at launch", "torchrun's default ..."
};

// The CPU binding and threads per rank (cpu_binding.h). this_host: this pod's name in the host
// list; this_pod: its affinity and cgroup quota (sys/cpu_facts.h). Volcano: a host's allocation
// is its role's CPU limit (this pod's also lowered to its quota); MPIJob: only this pod's quota.
// Without the rank wrapper (--no-rank-env) a per-rank OMP_NUM_THREADS that is the same on every
// host is exported instead; one that differs per host gets a warning. Call before add_rank_env.
void add_cpu_policy(LaunchPlan& plan, const JobSpec& spec, const std::string& this_host, const EnvMap& env,
                    const CpuFacts& this_pod);

// OMP_NUM_THREADS of the ranks of host i as planned (0: each rank decides from its pod's quota).
std::int64_t planned_threads(const LaunchPlan& plan, std::size_t i);

// Wraps plan.command in the rank-exec mode of `self` (this gj-mpirun binary, same path in every
// pod) so that every rank gets RANK, WORLD_SIZE, ... (rank_env.h).
// first_host: the first rank's host as the other pods resolve it (rendezvous_host in mpijob.h).
void add_rank_env(LaunchPlan& plan, const std::string& self, const EnvMap& env, const MasterPort& port,
                  const std::string& first_host);

// `MPI_HOSTS` as the platform example prints it: "h:s,h:s".
std::string hosts_argument(const std::vector<HostSlots>& hosts);

// [python, script, args...] for a .py script, else [script, args...].
std::vector<std::string> rank_command(const Invocation& inv, const std::string& python);

// workers: the parsed worker host list, nullopt when MPI_HOST is absent and no hosts file was
// read. Throws AgentError: kBadEnvironment for inconsistent inputs, kBadPlan when the inputs
// give no runnable job (0 slots, np <= 0).
LaunchPlan plan_master(const JobSpec& spec, const std::optional<HostList>& workers, const Invocation& inv,
                       const EnvMap& env);

// The sshd a worker becomes (and the master starts): session_env is the pod environment
// already filtered for sshd (filter_session_env in session_env.h).
SshdSetup plan_sshd(const AgentSettings& settings, std::vector<std::pair<std::string, std::string>> session_env);

// The command exec_worker_sshd runs, for dry-run display: sshd -D -e -f <state_dir>/sshd_config.
std::vector<std::string> worker_sshd_argv(const SshdSetup& setup);

}  // namespace gj
