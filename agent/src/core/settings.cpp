#include "settings.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "agent_error.h"
#include "defaults.h"
#include "exit_codes.h"
#include "quote.h"
#include "sshd_config.h"
#include "value_parsers.h"

namespace gj {
namespace {

using Store = decltype(Setting::store);
using Values = std::vector<std::string>;

const std::string& last(const Values& v) { return v.back(); }

[[noreturn]] void bad_choice(const std::string& label, const std::string& value, const std::string& choices) {
  throw AgentError{exit_code::kBadEnvironment, quoted_setting(label, value) + " is not one of " + choices + "; pick one of them"};
}

Store text(std::string AgentSettings::*field) {
  return [field](AgentSettings& s, const std::string&, const Values& v) { s.*field = last(v); };
}

Store boolean(bool AgentSettings::*field) {
  return [field](AgentSettings& s, const std::string& label, const Values& v) { s.*field = parse_bool(label, last(v)); };
}

// Whole seconds, 0 allowed (0 turns the feature off, as its help says).
Store seconds_or_off(std::int64_t AgentSettings::*field) {
  return [field](AgentSettings& s, const std::string& label, const Values& v) { s.*field = parse_count(label, last(v)); };
}

// Seconds as Horovod reads them (a decimal number, 0 off) into milliseconds.
Store decimal_seconds_ms(std::int64_t AgentSettings::*field) {
  return [field](AgentSettings& s, const std::string& label, const Values& v) {
    const std::string& text = last(v);
    char* end = nullptr;
    const double x = std::strtod(text.c_str(), &end);
    if (text.empty() || end == text.c_str() || *end != '\0' || !(x >= 0) || x > 1e9)
      throw AgentError{exit_code::kBadEnvironment,
                       label + "=\"" + text + "\" is not a non-negative number of seconds; set e.g. 60, or 0 for off"};
    s.*field = static_cast<std::int64_t>(x * 1000 + 0.5);
  };
}

// Whole seconds, at least 1; `fix` says what to do instead of 0.
Store seconds(std::int64_t AgentSettings::*field, const char* fix) {
  return [field, fix](AgentSettings& s, const std::string& label, const Values& v) {
    const std::int64_t n = parse_count(label, last(v));
    if (n < 1) throw AgentError{exit_code::kBadEnvironment, label + "=\"" + last(v) + "\" must be at least 1 second; " + fix};
    s.*field = n;
  };
}

template <typename T>
Store choice(T AgentSettings::*field, std::vector<std::pair<const char*, T>> names) {
  return [field, names](AgentSettings& s, const std::string& label, const Values& v) {
    std::string all;
    for (const auto& [name, value] : names) {
      if (last(v) == name) {
        s.*field = value;
        return;
      }
      all += (all.empty() ? "" : ", ") + std::string(name);
    }
    bad_choice(label, last(v), all);
  };
}

void store_mpi(AgentSettings& s, const std::string& label, const Values& v) {
  if (last(v) == "auto") {
    s.mpi.reset();
    return;
  }
  s.mpi = flavour_from_name(last(v));
  if (!s.mpi) bad_choice(label, last(v), "auto, openmpi, openmpi4, openmpi5, mpich, intel");
}

void store_supervise(AgentSettings& s, const std::string& label, const Values& v) {
  if (last(v) == "auto") s.supervise = Supervise::Auto;
  else s.supervise = parse_bool(label, last(v)) ? Supervise::On : Supervise::Off;
}

void store_horovod_alias(AgentSettings& s, const std::string& label, const Values& v) {
  if (last(v) == "gj") s.horovod_alias = HorovodAlias::Gj;
  else if (last(v) == "horovod") s.horovod_alias = HorovodAlias::Horovod;
  else s.horovod_alias = parse_bool(label, last(v)) ? HorovodAlias::On : HorovodAlias::Off;
}

void store_exports(AgentSettings& s, const std::string&, const Values& v) { s.exports = v; }

// Checked here, not only when sshd is prepared, so that the dry run fails as the real run would.
void store_state_dir(AgentSettings& s, const std::string& label, const Values& v) {
  if (!is_plain_config_path(last(v)))
    throw AgentError{exit_code::kBadEnvironment,
                     quoted_setting(label, last(v)) +
                         " must be an absolute path of letters, digits and ._/+@,=- only (it is written into "
                         "sshd_config and passed inside ssh's argument string); pick such a directory"};
  s.state_dir = last(v);
}

// A count that may be 0 (GJ_MAX_RESTARTS: 0 is today's behaviour, no restart).
Store count(std::int64_t AgentSettings::*field) {
  return [field](AgentSettings& s, const std::string& label, const Values& v) { s.*field = parse_count(label, last(v)); };
}

void store_port(AgentSettings& s, const std::string& label, const Values& v) { s.ssh_port = parse_port(label, last(v)); }

void store_preflight_port(AgentSettings& s, const std::string& label, const Values& v) {
  s.preflight_port = parse_port(label, last(v));
}

// At least 64 KiB (less measures latency, not bandwidth), at most 1 GiB.
void store_preflight_bytes(AgentSettings& s, const std::string& label, const Values& v) {
  const std::int64_t n = parse_count(label, last(v));
  if (n < (64 << 10) || n > (std::int64_t{1} << 30))
    throw AgentError{exit_code::kBadEnvironment, quoted_setting(label, last(v)) +
                                                     " must be between 65536 and 1073741824 bytes; the default is 4194304"};
  s.preflight_bytes = n;
}

const std::string kPort = std::to_string(defaults::kSshPort);
const std::string kConnect = std::to_string(defaults::kSshConnectTimeoutS);
const std::string kReady = std::to_string(defaults::kReadyTimeoutS);

// One row, field by field: Row("GJ_X").flag("--x").value("N").type(T::Count).default_value("1")
// .help("...").store(...). Unset fields: no flags, no placeholder, Text, no default, no store.
class Row {
 public:
  explicit Row(const char* variable) { s_.variable = variable; }
  Row& flag(const char* name) { return add_flag({name, nullptr}); }                  // takes a value
  Row& switch_flag(const char* name, const char* implied, const char* help = nullptr) {  // stands for `implied`
    return add_flag({name, implied, help});
  }
  Row& value(const char* placeholder) { return set(s_.value_name, placeholder); }
  Row& type(SettingType t) { return set(s_.type, t); }
  Row& default_value(const char* text) { return set(s_.default_value, text); }
  Row& shown_default(const char* text) { return set(s_.default_shown, text); }
  Row& help(const char* text) { return set(s_.help, text); }
  Row& store(Store fn) { return set(s_.store, std::move(fn)); }
  operator Setting() const { return s_; }  // NOLINT: rows convert where the table lists them

 private:
  template <typename F, typename V>
  Row& set(F& field, V v) {
    field = std::move(v);
    return *this;
  }
  Row& add_flag(SettingFlag f) {
    s_.flags.push_back(f);
    return *this;
  }
  Setting s_{"", {}, "", SettingType::Text, "", nullptr, "", {}};
};

// Written by the platform on every pod; users must not override them.
Setting platform(const char* variable, const char* shown, const char* help) {
  return Row(variable).shown_default(shown).help(help);
}

std::vector<Setting> make_table() {
  using T = SettingType;
  return {
      platform("GJ_TRAINING_ROLE", "", "pod role: master (computes hosts+np, runs mpiexec) or worker (runs sshd only)"),
      platform("GJ_TRAINING_VC_JOB_NAME", "", "Volcano job name; the master host is <pod>.<job>"),
      platform("GJ_TRAINING_POD_NAME", "", "this pod's name"),
      platform("GJ_TRAINING_MASTER_CPU_LIMIT", "", "master CPU limit (Kubernetes quantity, floored); slots when no role uses GPUs"),
      platform("GJ_TRAINING_MASTER_GPU_LIMIT", "", "master GPUs; slots on the master when GPUs are used"),
      platform("GJ_TRAINING_MASTER_REPLICAS", "", "master replicas; must be 1"),
      platform("GJ_TRAINING_WORKER_CPU_LIMIT", "", "worker CPU limit (Kubernetes quantity, floored); slots when no role uses GPUs"),
      platform("GJ_TRAINING_WORKER_GPU_LIMIT", "", "worker GPUs; slots on each worker when GPUs are used"),
      platform("GJ_TRAINING_WORKER_REPLICAS", "", "worker replicas; must equal the number of worker hosts"),
      platform("MPI_HOST", "(absent)", "worker hosts, comma-separated (Volcano mpi plugin); empty fields ignored"),
      // Written by the Kubeflow mpi-operator (MPIJob v2beta1) instead; read only without GJ_TRAINING_ROLE.
      platform("K_MPI_JOB_ROLE", "", "Kubeflow MPIJob pod role: launcher (plans from the hostfile, runs mpiexec) or worker (sshd)"),
      platform("OMPI_MCA_orte_default_hostfile", "", "MPIJob with Open MPI: the hostfile (`host slots=N` lines); selects Open MPI"),
      platform("HYDRA_HOST_FILE", "", "MPIJob with MPICH: the hostfile (`host:N` lines); selects MPICH"),
      platform("I_MPI_HYDRA_HOST_FILE", "", "MPIJob with Intel MPI: the hostfile (`host:N` lines); selects Intel MPI"),
      platform("HOSTNAME", "", "this pod's name (MPIJob: the launcher's own entry in the hostfile starts with it)"),
      // gj-mpirun's own settings.
      Row("GJ_HOSTS_FILE").flag("--hosts-file").value("F")
          .help("read worker hosts from this file (one per line) instead of MPI_HOST; when neither is set, "
                "/etc/volcano/worker.host is read if it exists")
          .store(text(&AgentSettings::hosts_file)),
      Row("GJ_MASTER_HOST").flag("--master-host").value("H").shown_default("<pod>.<job>")
          .help("the master's host name in the host list (local runs: localhost)")
          .store(text(&AgentSettings::master_host)),
      Row("GJ_MPI").flag("--mpi").value("F").type(T::Choice).default_value("auto")
          .help("MPI flavour: auto (from `mpiexec --version`), openmpi, openmpi5, mpich, intel")
          .store(store_mpi),
      Row("GJ_MPIEXEC").flag("--mpiexec").value("P").default_value("mpiexec")
          .help("mpiexec program (looked up in PATH)")
          .store(text(&AgentSettings::mpiexec)),
      Row("GJ_PYTHON").flag("--python").value("P").default_value("python3")
          .help("interpreter for a .py training script")
          .store(text(&AgentSettings::python)),
      Row("GJ_EXPORT").flag("--export").value("X").type(T::List)
          .help("extra variables for every rank, comma-separated NAME, NAME=VALUE or PREFIX* (flag repeatable)")
          .store(store_exports),
      Row("GJ_DEFAULT_EXPORTS").type(T::Bool).default_value("1")
          .switch_flag("--no-default-exports", "0",
                       "forward only what --export/GJ_EXPORT names, not the default set of job-wide variables")
          .help("forward the default set of job-wide variables (see docs)")
          .store(boolean(&AgentSettings::default_exports)),
      Row("GJ_HOSTFILE_MODE").flag("--hostfile-mode").value("M").type(T::Choice).default_value("auto")
          .help("auto: pass hosts in a hostfile only when the host argument would exceed 96 KiB; always; never")
          .store(choice(&AgentSettings::hostfile_mode,
                        {{"auto", HostfileMode::Auto}, {"always", HostfileMode::Always}, {"never", HostfileMode::Never}})),
      Row("GJ_RANK_ENV").type(T::Bool).default_value("1")
          .switch_flag("--no-rank-env", "0",
                       "run the command directly: no torchrun variables and no per-pod OMP_NUM_THREADS for the ranks")
          .help("give every rank torchrun's RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, "
                "MASTER_PORT and OMP_NUM_THREADS (its pod's CPUs / its pod's ranks) unless set")
          .store(boolean(&AgentSettings::rank_env)),
      Row("GJ_HOROVOD_ALIAS").type(T::Choice).default_value("0")
          .switch_flag("--horovod-alias", "1")
          .help("Python ranks import horovod, horovod.torch, horovod.tensorflow(.keras), horovod.keras as gj's modules "
                "(a PYTHONPATH entry to gj's alias folder); 1: refused when a real Horovod is installed, gj or "
                "horovod: which one wins then")
          .store(store_horovod_alias),
      Row("GJ_SSHD").flag("--sshd").value("P").default_value(defaults::kSshd)
          .help("sshd program")
          .store(text(&AgentSettings::sshd)),
      Row("GJ_SSH_KEYGEN").value("P").default_value(defaults::kSshKeygen)
          .help("program that generates the pod's sshd host key (looked up in PATH)")
          .store(text(&AgentSettings::ssh_keygen)),
      Row("GJ_NO_SSHD").type(T::Bool).default_value("0").switch_flag("--no-sshd", "1")
          .help("master: do not start its own sshd (local runs without ssh to itself)")
          .store(boolean(&AgentSettings::no_sshd)),
      Row("GJ_SSH_PORT").flag("--ssh-port").value("N").type(T::Port).default_value(kPort.c_str())
          .help("port sshd listens on and ssh connects to")
          .store(store_port),
      Row("GJ_SSH_CONNECT_TIMEOUT").flag("--ssh-connect-timeout").value("S").type(T::Count)
          .default_value(kConnect.c_str())
          .help("ssh ConnectTimeout in seconds")
          .store(seconds(&AgentSettings::ssh_connect_timeout_s, "raise it")),
      Row("GJ_SSH_DIR").flag("--ssh-dir").value("D").default_value(defaults::kSshDir)
          .help("mounted ssh keys (read-only; copied to a private place)")
          .store(text(&AgentSettings::ssh_dir)),
      Row("GJ_STATE_DIR").flag("--state-dir").value("D").default_value(defaults::kStateDir)
          .help("private directory for sshd config, host keys, copied keys, hostfile")
          .store(store_state_dir),
      Row("GJ_READY_TIMEOUT").flag("--ready-timeout").value("S").type(T::Count).default_value(kReady.c_str())
          .help("seconds the master waits for every host's sshd")
          .store(seconds(&AgentSettings::ready_timeout_s, "use --no-wait to skip the gate")),
      Row("GJ_MAX_RESTARTS").flag("--max-restarts").value("N").type(T::Count).default_value("0")
          .help("master: after a rank failure, wait for every host again and restart the whole job, up to N times; "
                "ranks see GJ_RESTART_COUNT, TORCHELASTIC_RESTART_COUNT and TORCHELASTIC_MAX_RESTARTS")
          .store(count(&AgentSettings::max_restarts)),
      Row("GJ_MPI_DETECT_TIMEOUT").value("S").type(T::Count).default_value("10")
          .help("seconds `mpiexec --version` may take before detection fails (pass --mpi to skip it)")
          .store(seconds(&AgentSettings::detect_timeout_s, "raise it or pass --mpi")),
      Row("GJ_NO_WAIT").type(T::Bool).default_value("0").switch_flag("--no-wait", "1")
          .help("master: skip the readiness gate")
          .store(boolean(&AgentSettings::no_wait)),
      Row("GJ_SSH_CHECK").type(T::Bool).default_value("0").switch_flag("--ssh-check", "1")
          .help("readiness gate also requires a real non-interactive ssh login")
          .store(boolean(&AgentSettings::ssh_check)),
      Row("GJ_SUPERVISE").type(T::Choice).default_value("auto")
          .switch_flag("--supervise", "1",
                       "always supervise mpiexec (forward signals, reap zombies, end what the job left behind)")
          .switch_flag("--no-supervise", "0", "exec mpiexec in place, even as PID 1 (no job monitor, no failure summary)")
          .help("auto: supervise mpiexec (the rank wrappers' job monitor, forward signals, reap zombies) when the ranks have "
                "wrappers (GJ_RANK_ENV) or gj-mpirun is PID 1; 1: always; 0: exec in place (no job monitor)")
          .store(store_supervise),
      Row("GJ_TERMINATION_LOG").value("F").default_value("/dev/termination-log")
          .help("the pod's termination message file (Kubernetes shows it in the pod status): the master's exit "
                "reason or rank failure summary, and a worker's failed rank")
          .store(text(&AgentSettings::termination_log)),
      Row("GJ_PREFLIGHT").value("M").type(T::Choice).default_value("on")
          .help("checks before mpiexec: on (a pod that sees fewer GPUs than its limit ends the job; a pod or link far "
                "below the job's network median is a warning; NCCL's transport logged on GPU jobs), strict (a slow "
                "pod or link ends the job too), off (nothing checked)")
          .store(choice(&AgentSettings::preflight,
                        {{"on", PreflightMode::On}, {"strict", PreflightMode::Strict}, {"off", PreflightMode::Off}})),
      Row("GJ_PREFLIGHT_PORT").value("N").type(T::Port).default_value("29411")
          .help("TCP port the network check listens on in every pod (free before the job starts)")
          .store(store_preflight_port),
      Row("GJ_PREFLIGHT_BYTES").value("N").type(T::Count).default_value("4194304")
          .help("bytes the network check sends on each measured link (3 links per pod)")
          .store(store_preflight_bytes),
      Row("GJ_GPU_ROOT").value("D").default_value("/")
          .help("where the GPU check reads proc/driver/nvidia/gpus and sys/class/infiniband (tests: a fake tree)")
          .store(text(&AgentSettings::gpu_root)),
      Row("GJ_NVML_LIBRARY").value("P").default_value("libnvidia-ml.so.1")
          .help("NVML, opened at run time by the GPU check (the driver's /proc tree where it cannot be opened)")
          .store(text(&AgentSettings::nvml_library)),
      Row("GJ_STOP_GRACE").value("S").type(T::Count).default_value("20")
          .help("master: on SIGTERM/SIGINT, every rank is first asked to stop (gj.torch.stop_requested()); when "
                "its program polls for that, the signal reaches mpiexec only this many seconds later (0: at once)")
          .store(seconds_or_off(&AgentSettings::stop_grace_s)),
      Row("HOROVOD_STALL_CHECK_TIME_SECONDS").value("S").default_value("60")
          .help("master: when ranks have waited this long in one collective, the log names the ranks that have "
                "not entered it with their state, CPU use and Python stack, and repeats it while the hang lasts "
                "(0: off)")
          .store(decimal_seconds_ms(&AgentSettings::stall_ms)),
      Row("GJ_HANG_TIMEOUT").flag("--hang-timeout").value("S").type(T::Count).default_value("900")
          .help("master: a collective that has made no progress for this long ends the job as a failure of the "
                "ranks that never entered it (exit 7; 0: never)")
          .store(seconds_or_off(&AgentSettings::hang_timeout_s)),
      Row("GJ_STATUS_INTERVAL").value("S").type(T::Count).default_value("60")
          .help("master: a `status:` line every this many seconds (collectives/s, bytes/s, slowest rank, largest "
                "RSS; 0: off)")
          .store(seconds_or_off(&AgentSettings::status_interval_s)),
      Row("GJ_METRICS_PORT").flag("--metrics-port").value("N").type(T::Count).default_value("9466")
          .help("master: serve Prometheus metrics (per rank, per pod, the job) at http://<master>:N/metrics (0: off)")
          .store([](AgentSettings& s, const std::string& label, const Values& v) {
            const std::int64_t n = parse_count(label, last(v));
            if (n > 65535)
              throw AgentError{exit_code::kBadEnvironment, label + "=\"" + last(v) + "\" is not a port (0-65535); 0 turns the endpoint off"};
            s.metrics_port = static_cast<int>(n);
          }),
      Row("GJ_LOG_LEVEL").flag("--log-level").value("L").type(T::Choice).default_value("info")
          .help("trace, debug, info, warn, error, off")
          .store(text(&AgentSettings::log_level)),
      // Read, not set by gj-mpirun.
      platform("PATH", defaults::kShellPath,
               "where mpiexec, the interpreter, sshd, ssh-keygen and a bare script name are looked up"),
  };
}

void check_log_level(const AgentSettings& s, const std::string& label) {
  static const char* const kLevels[] = {"trace", "debug", "info", "warn", "error", "off"};
  if (std::find(std::begin(kLevels), std::end(kLevels), s.log_level) == std::end(kLevels))
    bad_choice(label, s.log_level, "trace, debug, info, warn, error, off");
}

}  // namespace

// Every row (only == nullptr) or the rows of `only` from env and flags; the rest at their defaults.
AgentSettings resolve_rows(const EnvMap& env, const FlagValues& flags, const std::vector<std::string>* only);

std::string Setting::label() const {
  const std::string f = flag_text();
  return f.empty() ? variable : f + "/" + variable;
}

std::string Setting::flag_text() const {
  std::string out;
  for (const auto& f : flags) out += (out.empty() ? "" : " / ") + std::string(f.name);
  return out;
}

const std::vector<Setting>& settings_table() {
  static const std::vector<Setting> table = make_table();
  return table;
}

const Setting& setting(const std::string& variable) {
  for (const auto& s : settings_table())
    if (variable == s.variable) return s;
  throw AgentError{exit_code::kInternal, "internal: variable " + variable + " is read but missing from settings_table()"};
}

std::optional<std::string> read_variable(const EnvMap& env, const std::string& variable) {
  (void)setting(variable);
  const auto it = env.find(variable);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

AgentSettings resolve_settings(const EnvMap& env, const FlagValues& flags) {
  return resolve_rows(env, flags, nullptr);
}

AgentSettings resolve_settings_of(const EnvMap& env, const std::vector<std::string>& variables) {
  for (const auto& v : variables) (void)setting(v);  // a name that is not a row is a bug
  return resolve_rows(env, {}, &variables);
}

AgentSettings resolve_rows(const EnvMap& env, const FlagValues& flags, const std::vector<std::string>* only) {
  AgentSettings s;
  for (const Setting& row : settings_table()) {
    if (row.platform()) continue;
    const bool chosen_row = only == nullptr || std::find(only->begin(), only->end(), row.variable) != only->end();
    Values values;
    const auto from_env = chosen_row ? env.find(row.variable) : env.end();
    const std::string env_text = from_env != env.end() ? from_env->second : "";
    const auto from_flags = flags.find(row.variable);
    const Values flag_values = from_flags != flags.end() ? from_flags->second : Values{};
    if (row.type == SettingType::List) {
      values = split_fields(env_text, ",");
      for (const auto& v : flag_values)
        if (!v.empty()) values.push_back(v);
    } else {
      std::string chosen = flag_values.empty() ? env_text : flag_values.back();
      if (chosen.empty()) chosen = row.default_value;  // an empty value means "unset", as for every GJ_* variable
      values = {chosen};
    }
    row.store(s, row.label(), values);
  }
  check_log_level(s, setting("GJ_LOG_LEVEL").label());
  return s;
}

AgentSettings default_settings() { return resolve_settings({}, {}); }

}  // namespace gj
