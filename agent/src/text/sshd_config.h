// Pure rendering of the hardened sshd_config gj-mpirun runs sshd with. No I/O here.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <chrono>

#include "defaults.h"

namespace gj {

struct SshdConfigSpec {
  int port = defaults::kSshPort;
  std::vector<std::string> listen_addresses{"0.0.0.0", "::"};
  std::vector<std::string> host_keys;  // absolute paths (private keys)
  std::string authorized_keys_file;    // absolute path
  std::string pid_file;                // absolute path
  std::vector<std::pair<std::string, std::string>> session_env;  // written as SetEnv, in order
  // "PerSourcePenalties no": only for an sshd that knows the keyword (OpenSSH >= 9.8; older ones
  // refuse the whole file over it).
  bool no_per_source_penalties = false;
};

struct RenderedSshdConfig {
  std::string text;
  std::vector<std::string> warnings;  // one per variable left out (names only, never values)
};

// Why NAME=VALUE cannot be written as one SetEnv argument that sshd parses back to exactly
// NAME=VALUE; nullopt when it can.
std::optional<std::string> setenv_unexpressible_reason(const std::string& name, const std::string& value);

// The quoted SetEnv argument for NAME=VALUE ("NAME=VALUE" with \ and " escaped), as OpenSSH's
// argv_split() reads it back. Precondition: setenv_unexpressible_reason() is nullopt.
std::string setenv_argument(const std::string& name, const std::string& value);

// A path we put in sshd_config unquoted: absolute, and only [A-Za-z0-9._/+@,=-] (no spaces,
// quotes or sshd % tokens).
bool is_plain_config_path(const std::string& path);

RenderedSshdConfig render_sshd_config(const SshdConfigSpec& spec);

// The one sshd command line, for the worker's exec, the master's background sshd and the dry
// run alike: -D stays in the foreground (the pod's main process, or our supervised child; sshd
// reaps its sessions' orphans), -e logs to stderr (the pod log).
std::vector<std::string> sshd_argv(const std::string& sshd_path, const std::string& config_path);

// sshd's INFO line for a connection closed before authentication without any other word:
// "Connection closed by 10.77.0.10 port 54260 [preauth]". The readiness gate's probe (which
// exchanges identification strings and closes) leaves exactly this in a healthy pod's log, and
// so the sshd log relay drops it; a real client that fails says more ("authenticating user",
// "invalid user", a kex error), and those lines stay.
bool is_bare_preauth_close(const std::string& line);

// Where gj-mpirun writes the generated config inside the state dir.
std::string sshd_config_path(const std::string& state_dir);

// True when /etc/shadow text marks `user` as locked the way OpenSSH on Linux checks it (the
// password field starts with '!'). With UsePAM no, sshd then refuses every login of that user,
// keys included ("User root not allowed because account is locked").
bool shadow_account_locked(std::string_view shadow_text, std::string_view user);

// Everything needed to run an sshd that serves MPI ranks in a pod.
struct SshdSetup {
  std::string sshd_path = defaults::kSshd;     // GJ_SSHD / --sshd
  std::string state_dir = defaults::kStateDir;  // GJ_STATE_DIR: 0700, root-owned; keys, config
  int port = defaults::kSshPort;                // GJ_SSH_PORT / --ssh-port
  std::string ssh_dir = defaults::kSshDir;      // GJ_SSH_DIR: mounted (read-only) keys
  // Written into the generated sshd_config as SetEnv so every ssh session (every MPI rank on
  // this node) sees this pod's own values. Already filtered and ordered by the caller.
  std::vector<std::pair<std::string, std::string>> session_env;
  // Defaults are what the platform's images need:
  std::string privsep_dir = "/run/sshd";   // sshd's privilege separation dir, created 0755 when missing
  std::string ssh_keygen = defaults::kSshKeygen;  // GJ_SSH_KEYGEN: resolved through PATH
  std::vector<std::string> listen_addresses{"0.0.0.0", "::"};
  std::chrono::milliseconds listen_timeout{std::chrono::seconds(10)};  // master: wait for listen
  std::string shadow_file = "/etc/shadow";  // checked for a locked root account (warning only)
};

}  // namespace gj
