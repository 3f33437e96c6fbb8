#include "job_spec.h"

#include <algorithm>
#include <cctype>

#include "agent_error.h"
#include "sys/quote.h"
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

const std::vector<EnvVarDoc> kTable = {
    // Written by the platform on every pod (seed 004); users must not override them.
    {kRole, "", "", "pod role: master (computes hosts+np, runs mpiexec) or worker (runs sshd only)"},
    {kJobName, "", "", "Volcano job name; the master host is <pod>.<job>"},
    {kPodName, "", "", "this pod's name"},
    {kMasterCpu, "", "", "master CPU limit (Kubernetes quantity, floored); slots when no role uses GPUs"},
    {kMasterGpu, "", "", "master GPUs; slots on the master when GPUs are used"},
    {kMasterReplicas, "", "", "master replicas; must be 1"},
    {kWorkerCpu, "", "", "worker CPU limit (Kubernetes quantity, floored); slots when no role uses GPUs"},
    {kWorkerGpu, "", "", "worker GPUs; slots on each worker when GPUs are used"},
    {kWorkerReplicas, "", "", "worker replicas; must equal the number of worker hosts"},
    {kMpiHost, "", "(absent)", "worker hosts, comma-separated (Volcano mpi plugin); empty fields ignored"},
    // gj-mpirun's own settings: flag wins over variable, variable over default.
    {"GJ_HOSTS_FILE", "--hosts-file", "",
     "read worker hosts from this file (one per line) instead of MPI_HOST; when neither is set, "
     "/etc/volcano/worker.host is read if it exists"},
    {"GJ_MASTER_HOST", "--master-host", "<pod>.<job>", "the master's host name in the host list (local runs: localhost)"},
    {"GJ_MPI", "--mpi", "auto", "MPI flavour: auto (from `mpiexec --version`), openmpi, openmpi5, mpich, intel"},
    {"GJ_MPIEXEC", "--mpiexec", "mpiexec", "mpiexec program (looked up in PATH)"},
    {"GJ_PYTHON", "--python", "python3", "interpreter for a .py training script"},
    {"GJ_EXPORT", "--export", "",
     "extra variables for every rank, comma-separated NAME, NAME=VALUE or PREFIX* (flag repeatable)"},
    {"GJ_DEFAULT_EXPORTS", "--no-default-exports", "1", "forward the default set of job-wide variables (see docs)"},
    {"GJ_HOSTFILE_MODE", "--hostfile-mode", "auto",
     "auto: pass hosts in a hostfile only when the host argument nears 128 KiB; always; never"},
    {"GJ_SSHD", "--sshd", "/usr/sbin/sshd", "sshd program"},
    {"GJ_SSH_KEYGEN", "", "ssh-keygen", "program that generates the pod's sshd host key (looked up in PATH)"},
    {"GJ_NO_SSHD", "--no-sshd", "0", "master: do not start its own sshd (local runs without ssh to itself)"},
    {"GJ_SSH_PORT", "--ssh-port", "22", "port sshd listens on and ssh connects to"},
    {"GJ_SSH_CONNECT_TIMEOUT", "--ssh-connect-timeout", "10", "ssh ConnectTimeout in seconds"},
    {"GJ_SSH_DIR", "--ssh-dir", "/root/.ssh", "mounted ssh keys (read-only; copied to a private place)"},
    {"GJ_STATE_DIR", "--state-dir", "/run/gj-mpirun", "private directory for sshd config, host keys, copied keys, hostfile"},
    {"GJ_READY_TIMEOUT", "--ready-timeout", "300", "seconds the master waits for every host's sshd"},
    {"GJ_NO_WAIT", "--no-wait", "0", "master: skip the readiness gate"},
    {"GJ_SSH_CHECK", "--ssh-check", "0", "readiness gate also requires a real non-interactive ssh login"},
    {"GJ_SUPERVISE", "--supervise / --no-supervise", "auto",
     "auto: supervise mpiexec (forward signals, reap zombies) only when gj-mpirun is PID 1; 1: always; 0: exec"},
    {"GJ_LOG_LEVEL", "--log-level", "info", "trace, debug, info, warn, error, off"},
    // Read, not set by gj-mpirun.
    {"PATH", "", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
     "where mpiexec, the interpreter, sshd, ssh-keygen and a bare script name are looked up"},
};

const EnvVarDoc& doc(const std::string& name) {
  for (const auto& d : kTable)
    if (name == d.name) return d;
  throw AgentError{exit_code::kInternal, "internal: variable " + name + " is read but missing from env_table()"};
}

// Every read goes through the table, so an undocumented variable is a test failure, not a
// silent omission in --help.
std::optional<std::string> read(const EnvMap& env, const std::string& name) {
  (void)doc(name);
  const auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

std::string setting_name(const std::string& name) {
  const EnvVarDoc& d = doc(name);
  return d.flag[0] == '\0' ? name : std::string(d.flag) + "/" + name;
}

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

template <typename T>
T parsed_or(const EnvMap& env, const std::string& name, T fallback, T (*parse)(const std::string&, const std::string&)) {
  const auto v = read(env, name);
  if (!v || v->empty()) return fallback;
  return parse(setting_name(name), *v);
}

[[noreturn]] void bad_choice(const std::string& name, const std::string& value, const std::string& choices) {
  throw AgentError{exit_code::kBadEnvironment,
                   quoted_setting(setting_name(name), value) + " is not one of " + choices + "; pick one of them"};
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

RoleResources resources(const EnvMap& env, const char* cpu, const char* gpu, const char* replicas) {
  RoleResources r;
  r.cpu_text = required_text(env, cpu);
  r.cpu = parse_cpu_quantity(cpu, r.cpu_text);
  r.gpu = required_count(env, gpu);
  r.replicas = required_count(env, replicas);
  return r;
}

}  // namespace

const std::vector<EnvVarDoc>& env_table() { return kTable; }

const char* to_string(Role r) { return r == Role::Master ? "master" : "worker"; }

AgentSettings parse_settings(const EnvMap& env) {
  AgentSettings s;
  s.mpiexec = text_or(env, "GJ_MPIEXEC", s.mpiexec);
  const std::string mpi = text_or(env, "GJ_MPI", "auto");
  if (mpi != "auto") {
    s.mpi = flavour_from_name(mpi);
    if (!s.mpi) bad_choice("GJ_MPI", mpi, "auto, openmpi, openmpi4, openmpi5, mpich, intel");
  }
  s.python = text_or(env, "GJ_PYTHON", s.python);
  s.sshd = text_or(env, "GJ_SSHD", s.sshd);
  s.ssh_keygen = text_or(env, "GJ_SSH_KEYGEN", s.ssh_keygen);
  s.state_dir = text_or(env, "GJ_STATE_DIR", s.state_dir);
  s.ssh_dir = text_or(env, "GJ_SSH_DIR", s.ssh_dir);
  s.ssh_port = parsed_or(env, "GJ_SSH_PORT", s.ssh_port, parse_port);
  s.ssh_connect_timeout_s = parsed_or(env, "GJ_SSH_CONNECT_TIMEOUT", s.ssh_connect_timeout_s, parse_count);
  if (s.ssh_connect_timeout_s < 1)
    throw AgentError{exit_code::kBadEnvironment,
                     setting_name("GJ_SSH_CONNECT_TIMEOUT") + "=\"0\" must be at least 1 second; raise it"};
  s.ready_timeout_s = parsed_or(env, "GJ_READY_TIMEOUT", s.ready_timeout_s, parse_count);
  if (s.ready_timeout_s < 1)
    throw AgentError{exit_code::kBadEnvironment, setting_name("GJ_READY_TIMEOUT") +
                                                     "=\"0\" must be at least 1 second; use --no-wait to skip the gate"};
  s.no_wait = parsed_or(env, "GJ_NO_WAIT", s.no_wait, parse_bool);
  s.ssh_check = parsed_or(env, "GJ_SSH_CHECK", s.ssh_check, parse_bool);
  s.no_sshd = parsed_or(env, "GJ_NO_SSHD", s.no_sshd, parse_bool);
  const std::string sup = text_or(env, "GJ_SUPERVISE", "auto");
  if (sup == "auto") {
    s.supervise = Supervise::Auto;
  } else {
    s.supervise = parse_bool(setting_name("GJ_SUPERVISE"), sup) ? Supervise::On : Supervise::Off;
  }
  s.hosts_file = text_or(env, "GJ_HOSTS_FILE", "");
  const std::string mode = text_or(env, "GJ_HOSTFILE_MODE", "auto");
  if (mode == "auto") s.hostfile_mode = HostfileMode::Auto;
  else if (mode == "always") s.hostfile_mode = HostfileMode::Always;
  else if (mode == "never") s.hostfile_mode = HostfileMode::Never;
  else bad_choice("GJ_HOSTFILE_MODE", mode, "auto, always, never");
  s.exports = split_commas(text_or(env, "GJ_EXPORT", ""));
  s.default_exports = parsed_or(env, "GJ_DEFAULT_EXPORTS", s.default_exports, parse_bool);
  s.log_level = text_or(env, "GJ_LOG_LEVEL", s.log_level);
  static const char* const kLevels[] = {"trace", "debug", "info", "warn", "error", "off"};
  if (std::find(std::begin(kLevels), std::end(kLevels), s.log_level) == std::end(kLevels))
    bad_choice("GJ_LOG_LEVEL", s.log_level, "trace, debug, info, warn, error, off");
  return s;
}

JobSpec parse_job_spec(const EnvMap& env) {
  JobSpec spec;
  spec.settings = parse_settings(env);
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
  spec.master_host = text_or(env, "GJ_MASTER_HOST", spec.pod_name + "." + spec.job_name);
  return spec;
}

}  // namespace gj
