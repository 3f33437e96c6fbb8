// Environment map -> typed JobSpec. Every environment variable gj-mpirun reads is declared
// once, in env_table(): name, command-line flag (when there is one), default and meaning.
// --help and docs/agent.md are generated from / checked against this table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "env_map.h"
#include "mpi_flavour.h"

namespace gj {

struct EnvVarDoc {
  const char* name;
  const char* flag;          // "" when only the environment sets it
  const char* default_text;  // "" when required / none
  const char* meaning;
};

// All variables read, in --help order.
const std::vector<EnvVarDoc>& env_table();

enum class Role { Master, Worker };
const char* to_string(Role r);

enum class Supervise { Auto, On, Off };
enum class HostfileMode { Auto, Always, Never };

struct RoleResources {
  std::int64_t cpu = 0;       // CPU limit floored to whole CPUs
  std::string cpu_text;       // as the platform wrote it, for messages
  std::int64_t gpu = 0;
  std::int64_t replicas = 0;
};

// Settings of gj-mpirun itself (GJ_* and their flags); defaults in env_table().
struct AgentSettings {
  std::string mpiexec = "mpiexec";
  std::optional<MpiFlavour> mpi;  // nullopt: detect from `mpiexec --version`
  std::string python = "python3";
  std::string sshd = "/usr/sbin/sshd";
  std::string ssh_keygen = "ssh-keygen";
  std::string state_dir = "/run/gj-mpirun";
  std::string ssh_dir = "/root/.ssh";
  int ssh_port = 22;
  std::int64_t ssh_connect_timeout_s = 10;
  std::int64_t ready_timeout_s = 300;
  bool no_wait = false;
  bool ssh_check = false;
  bool no_sshd = false;
  Supervise supervise = Supervise::Auto;
  std::string hosts_file;  // empty: MPI_HOST, else /etc/volcano/worker.host
  HostfileMode hostfile_mode = HostfileMode::Auto;
  std::vector<std::string> exports;  // NAME, NAME=VALUE or PREFIX*
  bool default_exports = true;
  std::string log_level = "info";
};

struct JobSpec {
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
JobSpec parse_job_spec(const EnvMap& env);

// Only the agent settings (used for --help defaults and by tests).
AgentSettings parse_settings(const EnvMap& env);

}  // namespace gj
