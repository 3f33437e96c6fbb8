// Kubeflow MPIJob (mpi-operator v2beta1) without configuration: the operator tells each pod its
// role (K_MPI_JOB_ROLE launcher|worker), names the hostfile it mounts at /etc/mpi/hostfile in the
// variable of the MPI implementation it configured (OMPI_MCA_orte_default_hostfile, HYDRA_HOST_FILE,
// I_MPI_HYDRA_HOST_FILE), and lists one line per worker (plus the launcher when it runs ranks).
// Pure: the file is read in roles.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "env_map.h"
#include "mpi_flavour.h"
#include "plan.h"

namespace gj {

inline constexpr const char* kMpiJobHostfile = "/etc/mpi/hostfile";

// Which MPI implementation the operator configured, and the hostfile it named for it.
struct MpiJobEnv {
  std::string hostfile;                // path (default /etc/mpi/hostfile)
  std::string hostfile_variable;       // the variable that named it, "" for the default
  std::optional<MpiFlavour> flavour;   // nullopt: none of the operator's variables is set
};
MpiJobEnv mpijob_env(const EnvMap& env);

// "host slots=N" (Open MPI; other key=value words such as max_slots= are ignored), "host:N"
// (MPICH, Intel MPI), or "host" (1 slot); blank lines and '#' comments skipped. Hosts are
// validated and de-duplicated (validate_hosts). Throws AgentError (kBadEnvironment) naming the
// line number.
std::vector<HostSlots> parse_mpijob_hostfile(const std::string& origin, const std::string& text);

// Removes the user's -np/-n/--np N (also -np=N) from mpi_args and returns N; nullopt when absent.
// Throws AgentError (kUsage) for a missing or non-numeric count.
std::optional<std::int64_t> take_np(std::vector<std::string>& mpi_args);

// The launcher's plan: hosts and slots from the hostfile, np = their sum (or the user's -np, at
// most the sum); the gate waits for every host except this pod (`self`, listed when the launcher
// runs ranks, as its own name or "localhost"). Throws AgentError (kBadPlan) for 0 slots or an
// -np above the slots.
LaunchPlan plan_mpijob(const JobSpec& spec, const std::string& origin, const std::vector<HostSlots>& hosts,
                       const Invocation& inv, const EnvMap& env);

// True when a hostfile entry is this pod: "localhost", the pod's name, or a name whose first
// label is the pod's name (the operator writes <job>-launcher.<job>.<ns>.svc).
bool is_this_pod(const std::string& host, const std::string& pod_name);

// This pod's name as the other pods resolve it: <pod> + the domain of the hostfile's first
// other host (".<job>.<ns>.svc"), or the pod name alone when there is no domain to borrow.
std::string launcher_host_name(const std::string& pod_name, const std::vector<HostSlots>& hosts);

// MASTER_ADDR for the ranks: the first rank's host, except when that host is the launcher under a
// name only it can resolve (the operator's hostfile may list it as `localhost`): then the name the
// other pods resolve it by (launcher_host).
std::string rendezvous_host(const std::string& first_host, const std::string& pod_name,
                            const std::string& launcher_host);

}  // namespace gj
