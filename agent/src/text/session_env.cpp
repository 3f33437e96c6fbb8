#include "session_env.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <set>
#include <string>

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

bool is_service_link_name(std::string_view name, const std::set<std::string, std::less<>>& services) {
  // Kubernetes writes <SVC>_SERVICE_HOST for every Service, and beside it <SVC>_SERVICE_PORT*,
  // <SVC>_PORT and <SVC>_PORT_<N>_<PROTO>*: a name is a link only when its Service's HOST is there.
  for (std::size_t us = name.find('_'); us != std::string_view::npos; us = name.find('_', us + 1)) {
    const std::string_view svc = name.substr(0, us);
    if (services.count(svc) == 0) continue;
    const std::string_view rest = name.substr(us);
    if (rest.rfind("_SERVICE_", 0) == 0 || rest == "_PORT" || rest.rfind("_PORT_", 0) == 0) return true;
  }
  return false;
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
    if (value.size() > kMaxSessionValueBytes) {
      out.skipped.push_back({name, "value is " + std::to_string(value.size()) + " bytes, over " +
                                       std::to_string(kMaxSessionValueBytes / 1024) +
                                       " KiB (sshd cannot pass it to a session); pass it with --export on the master",
                             true});
      continue;
    }
    if (!seen.insert(name).second) {
      out.skipped.push_back({name, "duplicate name (the first value is kept)"});
      continue;
    }
    out.kept.emplace_back(name, value);
  }
  std::sort(out.kept.begin(), out.kept.end());
  if (out.kept.size() > kMaxSessionVariables) {
    const std::string limit = "the pod has " + std::to_string(out.kept.size()) + " variables; sshd allows 1000 per session";
    std::set<std::string, std::less<>> services;
    for (const auto& kv : out.kept) {
      const std::string& n = kv.first;
      const std::string suffix = "_SERVICE_HOST";
      if (n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
        services.insert(n.substr(0, n.size() - suffix.size()));
    }
    EnvList fit;
    for (auto& kv : out.kept) {
      if (is_service_link_name(kv.first, services)) out.skipped.push_back({kv.first, "Kubernetes service link (" + limit + ")", true});
      else fit.push_back(std::move(kv));
    }
    if (fit.size() > kMaxSessionVariables) {
      for (std::size_t i = kMaxSessionVariables; i < fit.size(); ++i)
        out.skipped.push_back({fit[i].first, "beyond the first " + std::to_string(kMaxSessionVariables) + " names (" + limit + ")", true});
      fit.resize(kMaxSessionVariables);
    }
    out.kept = std::move(fit);
  }
  return out;
}

}  // namespace gj
