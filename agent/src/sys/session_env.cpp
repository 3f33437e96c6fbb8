#include "session_env.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "sshd_config.h"

namespace gj {

const std::vector<std::string_view>& per_session_variable_names() {
  // sshd, login(1) or the shell set these for each session; the pod's values are wrong there.
  static const std::vector<std::string_view> names = {
      "HOSTNAME", "PWD",  "OLDPWD", "SHLVL",   "_",       "TERM",  "HOME",       "USER",
      "LOGNAME",  "SHELL", "MAIL",  "COLUMNS", "LINES",   "PS1",   "MOTD_SHOWN",
  };
  return names;
}

bool is_secret_name(std::string_view name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  for (const char* word : {"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"})
    if (upper.find(word) != std::string::npos) return true;
  return false;
}

std::string loggable_value(std::string_view name, std::string_view value) {
  return is_secret_name(name) ? std::string("<redacted>") : std::string(value);
}

SessionEnv filter_session_env(const EnvList& pod_env) {
  SessionEnv out;
  std::set<std::string> seen;
  const auto& per_session = per_session_variable_names();
  for (const auto& [name, value] : pod_env) {
    if (std::find(per_session.begin(), per_session.end(), name) != per_session.end()) {
      out.skipped.push_back({name, "set per session by sshd or the shell"});
      continue;
    }
    if (name.rfind("SSH_", 0) == 0) {
      out.skipped.push_back({name, "SSH_* belongs to each ssh session"});
      continue;
    }
    if (auto why = setenv_unexpressible_reason(name, value)) {
      out.skipped.push_back({name, *why});
      continue;
    }
    if (!seen.insert(name).second) {
      out.skipped.push_back({name, "duplicate name (the first value is kept)"});
      continue;
    }
    out.kept.emplace_back(name, value);
  }
  std::sort(out.kept.begin(), out.kept.end());
  return out;
}

}  // namespace gj
