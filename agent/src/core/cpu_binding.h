// Pure: which CPUs the ranks of a job may use, and how many threads each starts.
//
// Pods share nodes, and a pod's CPU limit is a CFS quota over all of the node's cores: every
// pod's mpiexec sees the whole node and would bind its local ranks to cores 0, 1, ... - the
// same cores in every pod on that node. So gj-mpirun turns the flavour's binding off unless this
// pod owns its CPUs (its cpuset is exactly its CPU allocation, as Kubernetes' static CPU manager
// gives a Guaranteed pod with whole CPUs), and a binding the user asks for wins. Unpinned, torch
// and OpenMP start one thread per core of the node: each rank gets OMP_NUM_THREADS = the pod's
// CPU allocation / the pod's ranks (at least 1) unless the user set it (torchrun does the same).
// The facts (affinity mask, cgroup quota) are read in sys/cpu_facts.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cgroup_cpu.h"  // CpuFacts
#include "env_map.h"

namespace gj {

// CPUs the pod may keep busy: the platform's CPU limit (whole CPUs; <= 0 means not given), lowered
// to the cgroup quota where that is smaller (both floored). nullopt when neither is known.
std::optional<std::int64_t> pod_cpu_allocation(std::int64_t platform_limit, const std::optional<double>& quota_cpus);

// OMP_NUM_THREADS for each of `ranks` ranks sharing `allocation` CPUs: allocation / ranks, at least 1.
std::int64_t threads_per_rank(std::int64_t allocation, std::int64_t ranks);

enum class BindingMode {
  None,            // gj-mpirun passes the flavour's "no binding" (bind_none_words)
  FlavourDefault,  // this pod owns its CPUs: mpiexec binds within them as it would
  User,            // the user's own binding, left alone
};
const char* to_string(BindingMode m);

struct BindingChoice {
  BindingMode mode = BindingMode::None;
  std::string reason;  // one line for --dry-run and the log
};

// The binding the user asked for, as the word or variable that asks (`--bind-to core`,
// `I_MPI_PIN_DOMAIN`), or "" when none: mpiexec words (--bind-to, -bind-to, --bind-to=X,
// --bind-to-core, --cpu-bind, --cpu-set, --cpu-list, --rankfile, -binding, the MCA parameters
// hwloc_base_binding_policy / hwloc_default_binding_policy, any I_MPI_PIN*) or the master's
// environment (OMPI_MCA_hwloc_base_binding_policy, PRTE_MCA_hwloc_default_binding_policy,
// HYDRA_BINDING, I_MPI_PIN*).
std::string user_binding(const std::vector<std::string>& mpi_args, const EnvMap& env);

// The decision. this_pod: the facts of the pod gj-mpirun runs in, this_pod_allocation its CPU
// allocation; ranks_elsewhere: some ranks run on other pods, whose cpusets this pod cannot see
// (so their binding cannot be judged and stays off: unbound ranks still stay inside their own
// pod's cpuset, binding would only add locality).
BindingChoice choose_binding(const std::vector<std::string>& mpi_args, const EnvMap& env, const CpuFacts& this_pod,
                             const std::optional<std::int64_t>& this_pod_allocation, bool ranks_elsewhere);

}  // namespace gj
