#include "job_spec.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "agent_error.h"
#include "quote.h"
#include "exit_codes.h"
#include "value_parsers.h"

namespace gj {
namespace {

constexpr const char* kRole = "GJ_TRAINING_ROLE";
constexpr const char* kJobName = "GJ_TRAINING_VC_JOB_NAME";
constexpr const char* kPodName = "GJ_TRAINING_POD_NAME";
constexpr const char* kMasterCpu = "GJ_TRAINING_MASTER_CPU_LIMIT";
constexpr const char* kMasterGpu = "GJ_TRAINING_MASTER_GPU_LIMIT";
constexpr const char* kMasterReplicas = "GJ_TRAINING_MASTER_REPLICAS";
constexpr const char* kWorkerCpu = "GJ_TRAINING_WORKER_CPU_LIMIT";
constexpr const char* kWorkerGpu = "GJ_TRAINING_WORKER_GPU_LIMIT";
constexpr const char* kWorkerReplicas = "GJ_TRAINING_WORKER_REPLICAS";
constexpr const char* kMpiHost = "MPI_HOST";
constexpr const char* kMpiJobRole = "K_MPI_JOB_ROLE";

std::optional<std::string> read(const EnvMap& env, const std::string& name) { return read_variable(env, name); }

std::string required_text(const EnvMap& env, const std::string& name) {
  const auto v = read(env, name);
  const std::string fix = "the platform sets it on every pod of an MPI job; for a local run export it yourself";
  if (!v) throw AgentError{exit_code::kBadEnvironment, name + " is not set; " + fix};
  if (v->empty()) throw AgentError{exit_code::kBadEnvironment, name + "=\"\" is empty; " + fix};
  return *v;
}

std::int64_t required_count(const EnvMap& env, const std::string& name) {
  return parse_count(name, required_text(env, name));
}

std::string text_or(const EnvMap& env, const std::string& name, const std::string& fallback) {
  const auto v = read(env, name);
  return v && !v->empty() ? *v : fallback;
}

RoleResources resources(const EnvMap& env, const char* cpu, const char* gpu, const char* replicas) {
  RoleResources r;
  r.cpu_text = required_text(env, cpu);
  r.cpu = parse_cpu_quantity(cpu, r.cpu_text);
  r.gpu = required_count(env, gpu);
  r.replicas = required_count(env, replicas);
  return r;
}

// Kubeflow MPIJob: the operator sets K_MPI_JOB_ROLE; hosts and slots come from its hostfile
// (read by the launcher's run), the pod's name from HOSTNAME (Kubernetes sets it).
JobSpec mpijob_spec(JobSpec spec, const EnvMap& env, const std::string& role) {
  spec.platform = Platform::MpiJob;
  if (role == "launcher") spec.role = Role::Master;
  else if (role == "worker") spec.role = Role::Worker;
  else
    throw AgentError{exit_code::kBadEnvironment, quoted_setting(kMpiJobRole, role) +
                                                     " is not a known role; the mpi-operator sets launcher or worker"};
  spec.pod_name = text_or(env, "HOSTNAME", "");
  spec.master_host = spec.settings.master_host;  // empty: derived from the hostfile (mpijob.h)
  return spec;
}

}  // namespace

const char* to_string(Role r) { return r == Role::Master ? "master" : "worker"; }

JobSpec parse_job_spec(const EnvMap& env) { return parse_job_spec(env, resolve_settings(env)); }

JobSpec parse_job_spec(const EnvMap& env, AgentSettings settings) {
  JobSpec spec;
  spec.settings = std::move(settings);
  const auto k_role = read(env, kMpiJobRole);
  if (!read(env, kRole) && k_role) return mpijob_spec(std::move(spec), env, *k_role);
  if (k_role)
    spec.platform_note = std::string("both ") + kRole + " and " + kMpiJobRole + " are set: using the gj platform's " +
                         "GJ_TRAINING_* (unset " + kRole + " to run as a Kubeflow MPIJob)";
  if (!read(env, kRole))
    throw AgentError{exit_code::kBadEnvironment,
                     std::string(kRole) + " is not set (nor " + kMpiJobRole +
                         ", which a Kubeflow MPIJob sets); the platform sets it on every pod of an MPI job; for a "
                         "local run export it yourself"};
  const std::string role = required_text(env, kRole);
  if (role == "master") {
    spec.role = Role::Master;
  } else if (role == "worker") {
    spec.role = Role::Worker;
  } else {
    throw AgentError{exit_code::kBadEnvironment, quoted_setting(kRole, role) +
                                                     " is not a known role; it must be master or worker"};
  }
  if (spec.role == Role::Worker) {
    spec.pod_name = text_or(env, kPodName, "");
    return spec;
  }
  spec.job_name = required_text(env, kJobName);
  spec.pod_name = required_text(env, kPodName);
  spec.master = resources(env, kMasterCpu, kMasterGpu, kMasterReplicas);
  spec.worker = resources(env, kWorkerCpu, kWorkerGpu, kWorkerReplicas);
  if (spec.master.replicas != 1)
    throw AgentError{exit_code::kBadEnvironment,
                     std::string(kMasterReplicas) + "=\"" + std::to_string(spec.master.replicas) +
                         "\" but an MPI job has exactly 1 master; set the master role's replicas to 1"};
  spec.mpi_host = read(env, kMpiHost);
  spec.master_host = spec.settings.master_host.empty() ? spec.pod_name + "." + spec.job_name : spec.settings.master_host;
  return spec;
}

}  // namespace gj
