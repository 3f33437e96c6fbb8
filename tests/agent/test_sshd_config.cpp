// The generated sshd_config (pure rendering) and SetEnv quoting, checked against a port of
// OpenSSH 9.2's argv_split (misc.c), the parser sshd applies to each config line.
#include <catch2/catch.hpp>
#include <map>
#include <sstream>

#include "sshd_config.h"

namespace {

// OpenSSH 9.2 misc.c argv_split(s, &argc, &argv, terminate_on_comment=1), transcribed.
std::vector<std::string> openssh_argv_split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  for (; i < s.size(); ++i) {
    if (s[i] == ' ' || s[i] == '\t') continue;
    if (s[i] == '#') break;
    char quote = 0;
    std::string arg;
    for (; i < s.size(); ++i) {
      if (s[i] == '\\') {
        if (i + 1 < s.size() && (s[i + 1] == '\'' || s[i + 1] == '"' || s[i + 1] == '\\' ||
                                 (quote == 0 && s[i + 1] == ' '))) {
          ++i;
          arg += s[i];
        } else {
          arg += s[i];
        }
      } else if (quote == 0 && (s[i] == ' ' || s[i] == '\t')) {
        break;
      } else if (quote == 0 && (s[i] == '"' || s[i] == '\'')) {
        quote = s[i];
      } else if (quote != 0 && s[i] == quote) {
        quote = 0;
      } else {
        arg += s[i];
      }
    }
    if (quote != 0) throw std::runtime_error("unterminated quote");
    out.push_back(arg);
    if (i >= s.size()) break;
  }
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

gj::SshdConfigSpec spec() {
  gj::SshdConfigSpec s;
  s.port = 2222;
  s.listen_addresses = {"0.0.0.0", "::"};
  s.host_keys = {"/run/gj-mpirun/ssh_host_ed25519_key"};
  s.authorized_keys_file = "/run/gj-mpirun/authorized_keys";
  s.pid_file = "/run/gj-mpirun/sshd.pid";
  return s;
}

}  // namespace

TEST_CASE("SetEnv arguments parse back to exactly NAME=VALUE") {
  auto value = GENERATE(as<std::string>{}, "", "plain", "with space", "  leading and trailing  ", "dq\"inside",
                        "sq'inside", "back\\slash", "trailing\\", "\\\"", "$HOME `id` $(id)", "#not-a-comment",
                        "a=b=c", "tab\there", "utf8 \xc3\xa9\xe2\x82\xac");
  CAPTURE(value);
  REQUIRE_FALSE(gj::setenv_unexpressible_reason("NAME", value));
  const std::string arg = gj::setenv_argument("NAME", value);
  CHECK(openssh_argv_split(arg) == std::vector<std::string>{"NAME=" + value});
  // And several on one line stay separate.
  CHECK(openssh_argv_split(arg + " " + arg) == std::vector<std::string>{"NAME=" + value, "NAME=" + value});
}

TEST_CASE("SetEnv: names and values that cannot be expressed") {
  struct Row {
    std::string name, value;
    bool expressible;
  };
  auto row = GENERATE(Row{"OK_1", "x", true}, Row{"_x", "", true}, Row{"1x", "x", false}, Row{"a-b", "x", false},
                      Row{"a.b", "x", false}, Row{"", "x", false}, Row{"X", "a\nb", false}, Row{"X", "a\rb", false},
                      Row{"X", std::string("a\0b", 3), false}, Row{"X", "\x7f", false}, Row{"X", "\x1b[0m", false});
  CAPTURE(row.name, row.value);
  CHECK(gj::setenv_unexpressible_reason(row.name, row.value).has_value() == !row.expressible);
}

TEST_CASE("sshd_config: hardened settings and paths from the state dir") {
  auto cfg = gj::render_sshd_config(spec());
  auto lines = lines_of(cfg.text);
  auto has = [&](const std::string& l) { return std::find(lines.begin(), lines.end(), l) != lines.end(); };
  auto line = GENERATE(as<std::string>{}, "Port 2222", "ListenAddress 0.0.0.0", "ListenAddress ::",
                       "HostKey /run/gj-mpirun/ssh_host_ed25519_key", "PidFile /run/gj-mpirun/sshd.pid",
                       "AuthorizedKeysFile /run/gj-mpirun/authorized_keys", "PubkeyAuthentication yes",
                       "PasswordAuthentication no", "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password",
                       "UsePAM no", "X11Forwarding no", "AllowAgentForwarding no", "AllowTcpForwarding no",
                       "PermitEmptyPasswords no", "PermitUserEnvironment no", "StrictModes yes");
  CAPTURE(line);
  CHECK(has(line));
  CHECK(cfg.warnings.empty());
}

TEST_CASE("sshd_config: each keyword once - no SetEnv without variables") {
  auto cfg = gj::render_sshd_config(spec());
  std::map<std::string, int> count;
  for (const auto& l : lines_of(cfg.text)) {
    if (l.empty() || l[0] == '#') continue;
    ++count[l.substr(0, l.find(' '))];
  }
  for (const auto& [keyword, n] : count) {
    CAPTURE(keyword);
    if (keyword == "ListenAddress") CHECK(n == 2);
    else CHECK(n == 1);  // sshd keeps the first value of most keywords: a repeat would be ignored
  }
  CHECK(count.count("SetEnv") == 0);
}

TEST_CASE("sshd_config: the session environment is one SetEnv line - inexpressible ones are warned about") {
  auto s = spec();
  s.session_env = {{"A", "1"}, {"B", "x y"}, {"BAD", "two\nlines"}, {"C_SECRET_TOKEN", "s3cr3t\n"}, {"D", "\"q\""}};
  auto cfg = gj::render_sshd_config(s);
  std::vector<std::string> setenv_lines;
  for (const auto& l : lines_of(cfg.text))
    if (l.rfind("SetEnv ", 0) == 0) setenv_lines.push_back(l);
  REQUIRE(setenv_lines.size() == 1);
  CHECK(openssh_argv_split(setenv_lines[0]) == std::vector<std::string>{"SetEnv", "A=1", "B=x y", "D=\"q\""});
  REQUIRE(cfg.warnings.size() == 2);
  CHECK_THAT(cfg.warnings[0], Catch::StartsWith("BAD not passed to ssh sessions"));
  CHECK_THAT(cfg.warnings[1], Catch::StartsWith("C_SECRET_TOKEN not passed"));
  CHECK(cfg.warnings[1].find("s3cr3t") == std::string::npos);
  CHECK(cfg.text.find("s3cr3t") == std::string::npos);
}

TEST_CASE("plain config paths") {
  struct Row {
    std::string path;
    bool ok;
  };
  auto row = GENERATE(Row{"/run/gj-mpirun", true}, Row{"/var/lib/gj_x+y@z,w=1", true}, Row{"relative", false},
                      Row{"", false}, Row{"/a b", false}, Row{"/a\"b", false}, Row{"/home/%u", false},
                      Row{"/a#b", false}, Row{"/a\nb", false});
  CAPTURE(row.path);
  CHECK(gj::is_plain_config_path(row.path) == row.ok);
}

TEST_CASE("locked accounts in /etc/shadow as OpenSSH sees them") {
  struct Row {
    std::string shadow;
    bool locked;
  };
  auto row = GENERATE(Row{"root:*:19000:0:99999:7:::\n", false}, Row{"root:!:19000::::::\n", true},
                      Row{"root:!!:19000::::::\n", true}, Row{"root:!$6$salt$hash:19000::::::\n", true},
                      Row{"root:$6$salt$hash:19000::::::\n", false}, Row{"root::19000::::::\n", false},
                      Row{"daemon:!:1::::::\nroot:*:1::::::\n", false}, Row{"rootx:!:1::::::\n", false},
                      Row{"", false});
  CAPTURE(row.shadow);
  CHECK(gj::shadow_account_locked(row.shadow, "root") == row.locked);
}

TEST_CASE("sshd_config: PerSourcePenalties off only where sshd knows the keyword") {
  auto s = spec();
  auto has_penalties = [](const gj::RenderedSshdConfig& c) {
    auto lines = lines_of(c.text);
    return std::find(lines.begin(), lines.end(), "PerSourcePenalties no") != lines.end();
  };
  CHECK_FALSE(has_penalties(gj::render_sshd_config(s)));  // OpenSSH < 9.8 refuses an unknown keyword
  s.no_per_source_penalties = true;
  CHECK(has_penalties(gj::render_sshd_config(s)));
}

TEST_CASE("sshd log relay: only the bare preauth close of a readiness probe is left out") {
  struct Row {
    const char* line;
    bool dropped;
  };
  auto row = GENERATE(Row{"Connection closed by 10.77.0.10 port 54260 [preauth]", true},
                      Row{"Connection closed by fd00::2 port 22 [preauth]", true},
                      Row{"Connection closed by authenticating user root 10.77.0.10 port 5 [preauth]", false},
                      Row{"Connection closed by invalid user bob 10.0.0.1 port 5 [preauth]", false},
                      Row{"kex_exchange_identification: Connection closed by remote host", false},
                      Row{"Connection closed by 127.0.0.1 port 40944", false},
                      Row{"Accepted publickey for root from 10.77.0.10 port 50382 ssh2: RSA SHA256:x", false},
                      Row{"Connection closed by 10.77.0.10 port 54260 [preauth] extra", false});
  INFO(row.line);
  CHECK(gj::is_bare_preauth_close(row.line) == row.dropped);
}
