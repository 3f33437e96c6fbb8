// The worker's session environment filter and secret redaction (pure).
#include <catch2/catch.hpp>

#include "session_env.h"

namespace {

bool kept(const gj::SessionEnv& e, const std::string& name) {
  for (const auto& [n, v] : e.kept)
    if (n == name) return true;
  return false;
}

}  // namespace

TEST_CASE("session env: platform and user variables are kept") {
  auto name = GENERATE(as<std::string>{}, "NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "CUDA_VISIBLE_DEVICES", "CUDA_HOME",
                       "PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "GJ_TRAINING_ROLE", "MPI_HOST", "OMPI_MCA_btl",
                       "LANG", "TZ", "KUBERNETES_SERVICE_HOST", "WANDB_API_KEY", "lower_case", "_LEADING");
  auto env = gj::filter_session_env({{name, "v"}});
  CAPTURE(name);
  CHECK(kept(env, name));
  CHECK(env.skipped.empty());
}

TEST_CASE("session env: per-session and inexpressible variables are skipped with a reason") {
  struct Row {
    std::string name, value, reason;
  };
  auto row = GENERATE(Row{"HOSTNAME", "pod-0", "set per session"}, Row{"PWD", "/", "set per session"},
                      Row{"OLDPWD", "/", "set per session"}, Row{"SHLVL", "1", "set per session"},
                      Row{"_", "/bin/env", "set per session"}, Row{"TERM", "xterm", "set per session"},
                      Row{"HOME", "/root", "set per session"}, Row{"USER", "root", "set per session"},
                      Row{"LOGNAME", "root", "set per session"}, Row{"SHELL", "/bin/bash", "set per session"},
                      Row{"MAIL", "/var/mail/root", "set per session"},
                      Row{"SSH_AUTH_SOCK", "/tmp/a", "SSH_*"}, Row{"SSH_CONNECTION", "1 2 3 4", "SSH_*"},
                      Row{"BAD-NAME", "x", "not a shell identifier"}, Row{"1ABC", "x", "not a shell identifier"},
                      Row{"", "x", "not a shell identifier"}, Row{"MULTI", "a\nb", "line break"},
                      Row{"CR", "a\rb", "line break"}, Row{"BELL", "a\ab", "control character"});
  auto env = gj::filter_session_env({{row.name, row.value}});
  CAPTURE(row.name);
  CHECK(env.kept.empty());
  REQUIRE(env.skipped.size() == 1);
  CHECK(env.skipped[0].name == row.name);
  CHECK_THAT(env.skipped[0].reason, Catch::Contains(row.reason));
  CHECK(env.skipped[0].reason.find(row.value) == std::string::npos);  // never the value
}

TEST_CASE("session env: sorted by name - the first of duplicate names wins - odd values survive") {
  auto env = gj::filter_session_env(
      {{"ZED", "1"}, {"ALPHA", "a b \"c\" 'd' \\e $f #g\th"}, {"ZED", "2"}, {"EMPTY", ""}, {"HOME", "/root"}});
  REQUIRE(env.kept.size() == 3);
  CHECK(env.kept[0] == std::pair<std::string, std::string>{"ALPHA", "a b \"c\" 'd' \\e $f #g\th"});
  CHECK(env.kept[1] == std::pair<std::string, std::string>{"EMPTY", ""});
  CHECK(env.kept[2] == std::pair<std::string, std::string>{"ZED", "1"});
  REQUIRE(env.skipped.size() == 2);
  CHECK(env.skipped[0].name == "ZED");
  CHECK_THAT(env.skipped[0].reason, Catch::Contains("duplicate"));
  CHECK(env.skipped[1].name == "HOME");
}

TEST_CASE("secret-looking names are redacted in logs") {
  struct Row {
    std::string name;
    bool secret;
  };
  auto row = GENERATE(Row{"AWS_SECRET_ACCESS_KEY", true}, Row{"WANDB_API_KEY", true}, Row{"HF_TOKEN", true},
                      Row{"db_password", true}, Row{"MYSQL_PASSWD", true}, Row{"GOOGLE_APPLICATION_CREDENTIALS", true},
                      Row{"client_secret", true}, Row{"PATH", false}, Row{"NCCL_IB_HCA", false},
                      Row{"CUDA_VISIBLE_DEVICES", false}, Row{"GJ_TRAINING_ROLE", false});
  CAPTURE(row.name);
  CHECK(gj::is_secret_name(row.name) == row.secret);
  CHECK(gj::loggable_value(row.name, "s3cr3t") == (row.secret ? "<redacted>" : "s3cr3t"));
}

TEST_CASE("session env: over sshd's 1000-variable limit, service links go first and every loss is named") {
  gj::EnvList pod = {{"PATH", "/usr/bin"}, {"NCCL_IB_HCA", "mlx5_0"}, {"MASTER_PORT", "29500"}};
  for (int i = 0; i < 160; ++i) {  // 7 variables per Service, as Kubernetes writes them
    const std::string svc = "SVC" + std::to_string(i);
    for (const char* suffix : {"_SERVICE_HOST", "_SERVICE_PORT", "_SERVICE_PORT_HTTP", "_PORT", "_PORT_80_TCP",
                               "_PORT_80_TCP_PROTO", "_PORT_80_TCP_ADDR"})
      pod.emplace_back(svc + suffix, "x");
  }
  const gj::SessionEnv s = gj::filter_session_env(pod);
  CHECK(s.kept.size() == 3);
  std::size_t lost = 0;
  for (const auto& k : s.skipped) {
    if (!k.loss) continue;
    ++lost;
    CHECK_THAT(k.reason, Catch::Contains("Kubernetes service link") && Catch::Contains("sshd allows 1000"));
  }
  CHECK(lost == 160 * 7);
  // Fewer than the limit: service links stay (a rank may use them).
  const gj::SessionEnv few = gj::filter_session_env({{"A_SERVICE_HOST", "1"}, {"A_PORT", "tcp://1:2"}});
  CHECK(few.kept.size() == 2);
  // Still too many without service links: the names sorting last are dropped, each named.
  gj::EnvList many;
  for (int i = 0; i < 1000; ++i) many.emplace_back("V" + std::to_string(1000 + i), "x");
  const gj::SessionEnv m = gj::filter_session_env(many);
  CHECK(m.kept.size() == gj::kMaxSessionVariables);
  CHECK(m.kept.back().first == "V1899");
  CHECK(m.skipped.size() == 100);
  CHECK(m.skipped.front().loss);
}

TEST_CASE("session env: a value too long for an ssh session is not passed, by name") {
  const gj::SessionEnv s = gj::filter_session_env({{"BIG", std::string(60 * 1024, 'a')}, {"OK", "1"}});
  REQUIRE(s.kept.size() == 1);
  REQUIRE(s.skipped.size() == 1);
  CHECK(s.skipped[0].name == "BIG");
  CHECK(s.skipped[0].loss);
  CHECK_THAT(s.skipped[0].reason, Catch::Contains("61440 bytes, over 32 KiB"));
}
