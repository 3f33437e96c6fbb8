// Environment map (+ the resolved settings) -> typed JobSpec. Every variable read is a row of
// settings_table() (settings.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "env_map.h"
#include "mpi_flavour.h"
#include "settings.h"

namespace gj {

enum class Role { Master, Worker };
const char* to_string(Role r);

struct RoleResources {
  std::int64_t cpu = 0;       // CPU limit floored to whole CPUs
  std::string cpu_text;       // as the platform wrote it, for messages
  std::int64_t gpu = 0;
  std::int64_t replicas = 0;
};

// Which platform's environment the pod has: the gj/Volcano platform's GJ_TRAINING_* (and
// MPI_HOST), or a Kubeflow MPIJob's K_MPI_JOB_ROLE + hostfile (mpijob.h).
enum class Platform { Volcano, MpiJob };

struct JobSpec {
  Platform platform = Platform::Volcano;
  std::string platform_note;  // one line when the choice needs saying (both environments present)
  Role role = Role::Master;
  std::string job_name;
  std::string pod_name;
  RoleResources master;
  RoleResources worker;
  std::optional<std::string> mpi_host;  // MPI_HOST; nullopt when absent (not when empty)
  std::string master_host;              // GJ_MASTER_HOST, default <pod>.<job>
  AgentSettings settings;
};

// Reads the settings; on a worker only GJ_TRAINING_ROLE (and the pod name when present) is
// required, because a worker only serves sshd: the master validates the rest and fails the
// job with the cause. Throws AgentError (kBadEnvironment) naming variable, value and fix.
JobSpec parse_job_spec(const EnvMap& env, AgentSettings settings);
// With the settings resolved from env alone (no flags).
JobSpec parse_job_spec(const EnvMap& env);

}  // namespace gj
