// Master side: which variables mpiexec forwards (-x / -genv) to every rank: a documented
// default set of job-wide knobs plus --export requests. (Worker side, the pod environment every
// ssh session gets, is session_env.h in the text library.) Secret-looking names: session_env.h.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "env_map.h"
#include "session_env.h"

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

// "NAME=VALUE", or "NAME=<redacted>" for secret-looking names.
std::string display_assignment(const std::string& name, const std::string& value);

// requests: NAME, NAME=VALUE or PREFIX* (from --export / GJ_EXPORT). Names not set on the
// master are skipped with a warning. Throws AgentError for malformed requests.
ExportSelection select_exports(const EnvMap& env, const std::vector<std::string>& requests, bool with_defaults);

}  // namespace gj
