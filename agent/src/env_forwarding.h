// Which variables reach the ranks, and how secrets stay out of output.
//  - Master side: variables forwarded by mpiexec (-x / -genv) to every rank: a documented
//    default set of job-wide knobs plus --export requests.
//  - Worker side: the pod environment an sshd session (every rank on that node) gets.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "env_map.h"

namespace gj {

struct ForwardedVar {
  std::string name;
  std::optional<std::string> value;  // set: NAME=VALUE given explicitly; nullopt: mpiexec reads it from its env
};

struct ExportSelection {
  std::vector<ForwardedVar> vars;
  std::vector<std::string> warnings;
};

// The default set: names (and PREFIX* patterns) forwarded when set on the master.
const std::vector<std::string>& default_exports();

// True when the name looks like it holds a secret (KEY, TOKEN, SECRET, PASSWORD, CREDENTIAL,
// any case): its value is never printed.
bool is_secret_name(const std::string& name);

// "NAME=VALUE", or "NAME=<redacted>" for secret-looking names.
std::string display_assignment(const std::string& name, const std::string& value);

// requests: NAME, NAME=VALUE or PREFIX* (from --export / GJ_EXPORT). Names not set on the
// master are skipped with a warning. Throws AgentError for malformed requests.
ExportSelection select_exports(const EnvMap& env, const std::vector<std::string>& requests, bool with_defaults);

// The pod environment minus per-session and per-login variables that sshd sets itself
// (HOSTNAME, PWD, OLDPWD, SHLVL, _, HOME, USER, LOGNAME, SHELL, TERM, MAIL, SSH_*) and
// entries sshd_config cannot carry (names that are not identifiers, values with newlines or
// double quotes). Sorted by name.
std::vector<std::pair<std::string, std::string>> session_env_for_sshd(const EnvMap& env);

}  // namespace gj
