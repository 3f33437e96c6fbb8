// The one table of everything gj-mpirun reads: the platform's variables and gj-mpirun's own
// settings (name, flags, variable, type, default, help). The command line, the environment
// parser, --help, the README's option-table test and the defaults of AgentSettings all come from
// it: a new setting is one row here plus its field in AgentSettings.
//
// Precedence: a flag wins over its variable, the variable over the default. Flags are kept
// apart from the environment (FlagValues) and each setting is parsed once, from the winning
// text, by its row's parser.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "env_map.h"
#include "mpi_flavour.h"

namespace gj {

enum class Supervise { Auto, On, Off };
enum class HostfileMode { Auto, Always, Never };
// Pre-flight checks (docs/agent.md): On: a pod short of GPUs ends the job, a slow link is a
// warning; Strict: a slow link ends the job too; Off: nothing is checked.
enum class PreflightMode { On, Strict, Off };
// The `horovod` alias (horovod_alias.h): off; on (refused beside an installed Horovod); on and gj
// wins over an installed Horovod; the installed Horovod wins where there is one, else gj.
enum class HorovodAlias { Off, On, Gj, Horovod };

// Settings of gj-mpirun itself. No defaults here: default_settings() gives the table's.
struct AgentSettings {
  std::string mpiexec;
  std::optional<MpiFlavour> mpi;  // nullopt: detect from `mpiexec --version`
  std::string python;
  std::string sshd;
  std::string ssh_keygen;
  std::string state_dir;
  std::string ssh_dir;
  int ssh_port = 0;
  std::int64_t ssh_connect_timeout_s = 0;
  std::int64_t ready_timeout_s = 0;
  std::int64_t detect_timeout_s = 0;  // bound on `mpiexec --version`
  std::int64_t max_restarts = 0;      // restarts of the whole job after a rank failure (restart_policy.h)
  bool no_wait = false;
  bool ssh_check = false;
  bool no_sshd = false;
  Supervise supervise = Supervise::Auto;
  std::string hosts_file;  // empty: MPI_HOST, else /etc/volcano/worker.host
  HostfileMode hostfile_mode = HostfileMode::Auto;
  std::vector<std::string> exports;  // NAME, NAME=VALUE or PREFIX*
  bool default_exports = true;
  std::string master_host;  // empty: <pod>.<job>
  bool rank_env = true;     // torchrun's RANK, WORLD_SIZE, ... for every rank
  HorovodAlias horovod_alias = HorovodAlias::Off;
  std::string log_level;
  std::string termination_log;  // the pod's termination message file
  PreflightMode preflight = PreflightMode::On;
  int preflight_port = 0;            // the network check's TCP port on every pod
  std::int64_t preflight_bytes = 0;  // sent on each measured link
  std::string gpu_root;              // where the GPU probe reads /proc and /sys (tests: a fake tree)
  std::string nvml_library;          // NVML, opened at run time
  // The job monitor's view inside a running job (docs/agent.md "Hangs", "Status lines", "Stop
  // requests", "Metrics"); 0 turns each off where the docs say so.
  std::int64_t stop_grace_s = 0;       // GJ_STOP_GRACE
  std::int64_t stall_ms = 0;           // HOROVOD_STALL_CHECK_TIME_SECONDS, in ms (0: no hang lines)
  std::int64_t hang_timeout_s = 0;     // GJ_HANG_TIMEOUT (0: never)
  std::int64_t status_interval_s = 0;  // GJ_STATUS_INTERVAL (0: no status lines)
  int metrics_port = 0;                // GJ_METRICS_PORT (0: no endpoint)
};

enum class SettingType { Text, Count, Port, Bool, Choice, List };

// One command-line spelling of a setting. implied == nullptr: the flag takes a value
// ("--mpi F"); otherwise it is a switch that stands for that value ("--no-wait" = "1"). help:
// what this switch does, when that is not what the setting's help says (a negative switch:
// "--no-rank-env" turns off what GJ_RANK_ENV describes); nullptr: the setting's help.
struct SettingFlag {
  const char* name;
  const char* implied;
  const char* help = nullptr;
};

struct Setting {
  const char* variable;
  std::vector<SettingFlag> flags;  // empty: environment only (or written by the platform)
  const char* value_name;          // placeholder in --help / README: "F", "N", "S", ...
  SettingType type;
  const char* default_value;       // text parsed like any other value; "" = none
  const char* default_shown;       // in --help / README, when it differs from default_value
  const char* help;
  // Stores the parsed value; label names the setting in errors ("--ssh-port/GJ_SSH_PORT").
  // Empty for what the platform writes (parse_job_spec reads those).
  std::function<void(AgentSettings&, const std::string& label, const std::vector<std::string>& values)> store;

  bool platform() const { return !store; }
  std::string shown_default() const { return default_shown != nullptr ? default_shown : default_value; }
  // "--ssh-port/GJ_SSH_PORT", or the variable alone when there is no flag.
  std::string label() const;
  // "--supervise / --no-supervise", "" without flags.
  std::string flag_text() const;
};

// Every variable gj-mpirun reads, in --help order.
const std::vector<Setting>& settings_table();
const Setting& setting(const std::string& variable);  // throws AgentError (internal) when not a row

// Flag values from the command line: variable -> the values given, in order (a value flag's
// text, a switch's implied value).
using FlagValues = std::map<std::string, std::vector<std::string>>;

// The table's defaults.
AgentSettings default_settings();

// The settings from flags, then environment, then defaults. List settings (GJ_EXPORT) take the
// variable's comma-separated entries followed by every flag value. Throws AgentError
// (kBadEnvironment) naming the flag and variable, the value and the fix.
AgentSettings resolve_settings(const EnvMap& env, const FlagValues& flags = {});

// Only the given rows from the environment, every other setting at its default: for the rank
// mode, which reads GJ_STATE_DIR and must not fail on a setting it does not use.
AgentSettings resolve_settings_of(const EnvMap& env, const std::vector<std::string>& variables);

// The same check-and-read for the platform's variables: nullopt when absent. Reading a
// variable that is not a row is an internal error (so --help cannot miss one).
std::optional<std::string> read_variable(const EnvMap& env, const std::string& variable);

}  // namespace gj
