// torchrun's rank environment for every rank, whatever the MPI flavour: RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT, and OMP_NUM_THREADS (the
// pod's CPU allocation / its ranks, cpu_binding.h). mpiexec starts every rank
// as `gj-mpirun --rank-exec <spec> -- <command...>` (the static binary every pod already has);
// that small mode sets the variables from what the MPI flavour gives the rank and runs the
// command under the rank wrapper (sys/rank_guard.h). Pure: run_rank (roles.cpp) applies the result.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cpu_binding.h"
#include "env_map.h"

namespace gj {

inline constexpr const char* kRankExecFlag = "--rank-exec";
// torchrun's default, used when the first rank's host is not this pod (no free port to ask for).
inline constexpr int kDefaultMasterPort = 29500;

// What the master passes to every rank: the rendezvous address and the slots of each host in
// host order (run-length encoded in the argument so that a large job stays short).
struct RankEnvSpec {
  std::string master_addr;
  int master_port = kDefaultMasterPort;
  std::vector<std::int64_t> slots;  // per host, in host order (names are not needed)
  std::vector<std::int64_t> cpus;   // per host: the pod's CPU allocation as the master knows it; 0: not known
  // GPU jobs (the pre-flight checks, preflight.h): the folder of each pod where every rank has
  // NCCL write its INIT/NET debug lines, unless the rank's NCCL_DEBUG is set; "" none.
  std::string nccl_log_dir;
  bool operator==(const RankEnvSpec& o) const {
    return master_addr == o.master_addr && master_port == o.master_port && slots == o.slots && cpus == o.cpus &&
           nccl_log_dir == o.nccl_log_dir;
  }
};

// "<addr>,<port>,<slots>/<cpus>*<hosts>,...[,nccl=<dir>]" e.g. "job-master-0.job,41234,2/4*1,4/8*3" (a run
// without "/<cpus>" has cpus 0; the NCCL folder last, since a state dir may hold commas).
std::string encode_rank_env_spec(const RankEnvSpec& spec);
// Throws AgentError (kUsage) naming the bad part.
RankEnvSpec decode_rank_env_spec(const std::string& text);

// The NCCL debug variables a rank gets with RankEnvSpec::nccl_log_dir (when its NCCL_DEBUG is
// unset): NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,NET, NCCL_DEBUG_FILE=<dir>/nccl-rank<RANK>.log.
std::string nccl_debug_file(const std::string& dir, const std::string& rank);

// The variables torchrun sets, in the order shown by --dry-run.
const std::vector<const char*>& rank_env_names();

struct RankEnv {
  std::vector<std::pair<std::string, std::string>> set;  // to setenv before exec
  std::vector<std::string> kept;      // already in the environment: the user's value wins
  std::string source;                 // "OMPI_COMM_WORLD_*", "PMI_* / MPI_LOCALRANKID"
  std::vector<std::string> warnings;  // one line each
};

// From the rank's environment (Open MPI: OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE};
// MPICH/Intel hydra: PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS). GROUP_RANK is the
// index of the rank's host: gj-mpirun maps ranks by slot, so rank r runs on the host whose
// slot range holds r. OMP_NUM_THREADS = threads_per_rank(the host's CPUs lowered to this pod's
// cgroup quota, LOCAL_WORLD_SIZE) when either is known. Throws AgentError (kBadEnvironment) when
// no flavour's variables are there.
RankEnv rank_environment(const EnvMap& env, const RankEnvSpec& spec, const CpuFacts& this_pod = {});

// Where MASTER_ADDR and MASTER_PORT come from, for --dry-run and the log.
struct RankEnvOrigin {
  std::string addr;  // "MASTER_ADDR (yours)", "the first rank's host"
  std::string port;
};

// Master: the spec from the plan's hosts; the user's MASTER_ADDR / MASTER_PORT (master's
// environment) win over the first rank's host and chosen_port.
RankEnvSpec master_rank_env_spec(const std::vector<std::int64_t>& slots, const std::string& first_host,
                                 const EnvMap& env, int chosen_port, const std::string& port_how,
                                 RankEnvOrigin* origin);

// Master: [self, --rank-exec, spec, --, command...].
std::vector<std::string> rank_exec_command(const std::string& self, const RankEnvSpec& spec,
                                           const std::vector<std::string>& command);

inline constexpr const char* kRankMonitorFlag = "--monitor";

// Master, at launch: the same command with `--monitor <endpoint>` (the job monitor's address,
// sys/job_monitor.h) after the spec. A command that is not a --rank-exec one is returned as is.
std::vector<std::string> with_rank_monitor(const std::vector<std::string>& command, const std::string& endpoint);

// The rank mode's arguments after --rank-exec: <spec> [--monitor <endpoint>] -- <command...>.
struct RankExecArgs {
  std::string spec;
  std::string monitor;  // empty: no job monitor
  std::vector<std::string> command;
};
// Throws AgentError (kUsage) with the usage line.
RankExecArgs parse_rank_exec_args(const std::vector<std::string>& args);

}  // namespace gj
