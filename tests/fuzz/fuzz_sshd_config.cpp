// sshd_config rendering of an arbitrary pod environment (SetEnv) and the session-env filter.
// Input: "NAME=VALUE" lines (C escapes decoded: values may hold newlines, quotes, '#', any
// byte). The environment goes through filter_session_env() as the worker does, and also
// straight into render_sshd_config(), whose own check must hold without the filter.
// Invariants beyond "no crash", with sshd's own line reader (sshd_config_oracle.h):
//  - the rendered text is whole lines, no NUL and no CR, and every line is a comment or a
//    directive from the fixed hardened set: no value can add or change a directive;
//  - authentication stays key-only whatever the environment holds;
//  - every variable rendered comes back from sshd's tokenizer as exactly one NAME=VALUE word,
//    equal to the input; every variable left out is named in a warning (name only);
//  - sshd 9.2 applies only the FIRST SetEnv line (servconf.c: `if (!*activep || uvalue != 0)
//    continue;`), so the variables sshd actually applies must be exactly those rendered;
//  - the filter keeps no per-session variable, no SSH_*, no name twice, and sorts by name.
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "session_env.h"
#include "sshd_config.h"
#include "sshd_config_oracle.h"

namespace {

const std::set<std::string>& hardened_keywords() {
  static const std::set<std::string> k = {
      "Port", "ListenAddress", "HostKey", "PidFile", "AuthorizedKeysFile", "PubkeyAuthentication",
      "PasswordAuthentication", "KbdInteractiveAuthentication", "HostbasedAuthentication",
      "PermitEmptyPasswords", "PermitRootLogin", "UsePAM", "StrictModes", "X11Forwarding",
      "AllowAgentForwarding", "AllowTcpForwarding", "AllowStreamLocalForwarding", "PermitTunnel",
      "GatewayPorts", "PermitUserEnvironment", "PermitUserRC", "UseDNS", "PrintMotd", "PrintLastLog",
      "LoginGraceTime", "MaxStartups", "MaxSessions", "Subsystem", "SetEnv",
  };
  return k;
}

// A value that cannot occur in any fixed message text by chance: it holds a '%', which no
// message of gj-mpirun contains, so finding it in a message means the value was copied there.
bool looks_unique(const std::string& value) { return value.size() >= 2 && value.find('%') != std::string::npos; }

void check_rendered(const gj::SshdConfigSpec& spec, const gj::RenderedSshdConfig& r, const std::string& input) {
  const std::string& t = r.text;
  GJ_FUZZ_CHECK(!t.empty() && t.back() == '\n', "config does not end with a newline");
  GJ_FUZZ_CHECK(t.find('\0') == std::string::npos, "NUL in sshd_config: " + input);
  GJ_FUZZ_CHECK(t.find('\r') == std::string::npos, "CR in sshd_config: " + input);

  std::map<std::string, std::string> first_value;  // keyword -> first argument (sshd: first wins)
  std::vector<std::string> rendered_env;           // NAME=VALUE words of all SetEnv lines
  std::vector<std::string> applied_env;            // those sshd 9.2 applies (first SetEnv line only)
  int setenv_lines = 0;
  std::size_t start = 0;
  while (start < t.size()) {
    const auto nl = t.find('\n', start);
    const auto parsed = gj::fuzz::sshd::parse_line(t.substr(start, nl - start));
    start = nl + 1;
    if (!parsed) continue;
    GJ_FUZZ_CHECK(hardened_keywords().count(parsed->keyword) == 1,
                  "directive outside the hardened set: " + parsed->keyword + " from " + input);
    GJ_FUZZ_CHECK(!parsed->args.empty(), "directive without argument: " + parsed->keyword);
    if (parsed->keyword == "SetEnv") {
      ++setenv_lines;
      for (const auto& a : parsed->args) {
        rendered_env.push_back(a);
        if (setenv_lines == 1) applied_env.push_back(a);
      }
    } else {
      first_value.emplace(parsed->keyword, parsed->args[0]);
    }
  }
  GJ_FUZZ_CHECK(first_value["PasswordAuthentication"] == "no", input);
  GJ_FUZZ_CHECK(first_value["KbdInteractiveAuthentication"] == "no", input);
  GJ_FUZZ_CHECK(first_value["PermitEmptyPasswords"] == "no", input);
  GJ_FUZZ_CHECK(first_value["PermitRootLogin"] == "prohibit-password", input);
  GJ_FUZZ_CHECK(first_value["PermitUserEnvironment"] == "no", input);
  GJ_FUZZ_CHECK(first_value["Port"] == std::to_string(spec.port), input);

  std::vector<std::string> expected;
  for (const auto& [name, value] : spec.session_env) {
    if (gj::setenv_unexpressible_reason(name, value)) {
      bool warned = false;
      for (const auto& w : r.warnings) {
        if (w.rfind(name + " ", 0) != 0) continue;
        warned = true;
        if (looks_unique(value))
          GJ_FUZZ_CHECK(w.find(value, name.size()) == std::string::npos, "a warning repeats a value: " + w);
      }
      GJ_FUZZ_CHECK(warned, "variable left out without a warning naming it: " + name);
      continue;
    }
    expected.push_back(name + "=" + value);
  }
  GJ_FUZZ_CHECK(rendered_env == expected, "SetEnv words do not read back as the session env: " + input);
  GJ_FUZZ_CHECK(applied_env == expected,
                "sshd applies only the first SetEnv line; these variables never reach a session: " + input);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const auto pod_env = gj::fuzz::parse_env_lines(input);

  const auto filtered = gj::filter_session_env(pod_env);
  GJ_FUZZ_CHECK(std::is_sorted(filtered.kept.begin(), filtered.kept.end()), "kept variables not sorted");
  std::set<std::string> names;
  const auto& per_session = gj::per_session_variable_names();
  for (const auto& [name, value] : filtered.kept) {
    GJ_FUZZ_CHECK(names.insert(name).second, "variable kept twice: " + name);
    GJ_FUZZ_CHECK(name.rfind("SSH_", 0) != 0, "SSH_* kept: " + name);
    GJ_FUZZ_CHECK(std::find(per_session.begin(), per_session.end(), name) == per_session.end(),
                  "per-session variable kept: " + name);
    GJ_FUZZ_CHECK(!gj::setenv_unexpressible_reason(name, value), "unexpressible variable kept: " + name);
  }
  GJ_FUZZ_CHECK(filtered.kept.size() + filtered.skipped.size() == pod_env.size(), "a variable neither kept nor skipped");
  for (const auto& s : filtered.skipped)
    for (const auto& [name, value] : pod_env)
      if (name == s.name)
        if (looks_unique(value))
          GJ_FUZZ_CHECK(s.reason.find(value) == std::string::npos, "skip reason repeats the value of " + name);

  gj::SshdConfigSpec spec;
  spec.port = 2222;
  spec.host_keys = {"/run/gj-mpirun/ssh_host_ed25519_key"};
  spec.authorized_keys_file = "/run/gj-mpirun/authorized_keys";
  spec.pid_file = "/run/gj-mpirun/sshd.pid";
  spec.session_env = filtered.kept;
  check_rendered(spec, gj::render_sshd_config(spec), input);
  spec.session_env = pod_env;  // unfiltered: the renderer's own check must hold alone
  check_rendered(spec, gj::render_sshd_config(spec), input);
  return 0;
}
