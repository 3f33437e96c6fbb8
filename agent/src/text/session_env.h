// Which of the pod's environment variables a worker writes into sshd_config (SetEnv) so that
// every ssh session, i.e. every MPI rank on the node, sees the node's own values. Pure.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gj {

using EnvList = std::vector<std::pair<std::string, std::string>>;

struct SkippedVariable {
  std::string name;
  std::string reason;  // never contains the value
  bool loss = false;   // a variable the ranks may need, dropped for a limit: log it as a warning
};

// sshd refuses a session with more than 1000 variables (child_set_env: too many env vars); the
// session itself brings a dozen. Above this many, Kubernetes service links go first (a namespace
// with ~150 Services gives 1000+), then the names sorting last.
inline constexpr std::size_t kMaxSessionVariables = 900;
// Longer values are not forwarded (a 60 KB value breaks the session setup).
inline constexpr std::size_t kMaxSessionValueBytes = 32 * 1024;


struct SessionEnv {
  EnvList kept;                          // sorted by name; first occurrence of a name wins
  std::vector<SkippedVariable> skipped;  // in input order
};

// Variables sshd or the login shell set per session (HOME, USER, PWD, SHLVL, ...), SSH_*, and
// anything SetEnv cannot carry are skipped; everything else the platform or the user set is
// kept (NCCL_*, CUDA*, PATH, LD_LIBRARY_PATH, PYTHONPATH, GJ_*, ...).
SessionEnv filter_session_env(const EnvList& pod_env);

// The per-session names that are always skipped (documented in docs/sys.md).
const std::vector<std::string_view>& per_session_variable_names();

// True when the name looks like it holds a secret (KEY, TOKEN, SECRET, PASSWORD, PASSWD,
// CREDENTIAL, case-insensitive): its value must never be logged.
bool is_secret_name(std::string_view name);

// The value as it may appear in logs: "<redacted>" for secret-looking names.
std::string loggable_value(std::string_view name, std::string_view value);

}  // namespace gj
