#include <catch2/catch.hpp>

#include "env_forwarding.h"
#include "exit_codes.h"
#include "test_support.h"

using namespace gj;

namespace {
std::vector<std::string> names(const std::vector<ForwardedVar>& vs) {
  std::vector<std::string> out;
  for (const auto& v : vs) out.push_back(v.name);
  return out;
}
}  // namespace

TEST_CASE("assignments of secret-looking names are redacted", "[env]") {
  CHECK(display_assignment("HF_TOKEN", "hf_abc") == "HF_TOKEN=<redacted>");
  CHECK(display_assignment("aws_secret_access_key", "x") == "aws_secret_access_key=<redacted>");
  CHECK(display_assignment("MODE", "fast") == "MODE=fast");
}

TEST_CASE("default exports: job-wide knobs set on the master, never per-node RDMA/NIC settings", "[env]") {
  const EnvMap env = {{"OMP_NUM_THREADS", "4"},   {"NCCL_DEBUG", "INFO"},       {"NCCL_IB_HCA", "mlx5_0"},
                      {"NCCL_SOCKET_IFNAME", "eth0"}, {"HOROVOD_FUSION_THRESHOLD", "1"}, {"PATH", "/bin"},
                      {"CUDA_VISIBLE_DEVICES", "0"}, {"GJ_COLL_SHM_WAIT", "sleep"}, {"GJ_TRAINING_ROLE", "master"},
                      {"GJ_TORCH_BUCKET_BYTES", "1048576"}, {"TF_USE_LEGACY_KERAS", "1"}};
  const ExportSelection sel = select_exports(env, {}, true);
  CHECK(names(sel.vars) == std::vector<std::string>{"OMP_NUM_THREADS", "NCCL_DEBUG", "HOROVOD_FUSION_THRESHOLD",
                                                    "TF_USE_LEGACY_KERAS", "GJ_COLL_SHM_WAIT", "GJ_TORCH_BUCKET_BYTES"});
  CHECK(sel.warnings.empty());
  CHECK(select_exports(env, {}, false).vars.empty());
  for (const auto& d : default_exports()) {
    INFO(d);
    CHECK(d.rfind("NCCL_IB_", 0) == std::string::npos);
  }
}

TEST_CASE("export requests: NAME, NAME=VALUE and PREFIX patterns", "[env]") {
  const EnvMap env = {{"MY_A", "1"}, {"MY_B", "2"}, {"OTHER", "3"}, {"NCCL_DEBUG", "WARN"}};
  const ExportSelection sel = select_exports(env, {"OTHER", "MY_*", "X=1", "NCCL_DEBUG=INFO", "MISSING", "NONE_*"}, true);
  CHECK(names(sel.vars) == std::vector<std::string>{"NCCL_DEBUG", "OTHER", "MY_A", "MY_B", "X"});
  CHECK(sel.vars[0].value == std::optional<std::string>("INFO"));  // explicit value replaces the default entry
  CHECK_FALSE(sel.vars[1].value.has_value());
  CHECK(sel.vars[4].value == std::optional<std::string>("1"));
  REQUIRE(sel.warnings.size() == 2);
  CHECK_THAT(sel.warnings[0], Catch::Contains("--export MISSING: no such variable"));
  CHECK_THAT(sel.warnings[1], Catch::Contains("--export NONE_*"));
  for (const char* bad : {"1ABC", "A-B", "A B", "A*B*"}) {
    INFO(bad);
    test::require_agent_error([&] { select_exports(env, {bad}, false); }, exit_code::kBadEnvironment,
                              std::string("--export/GJ_EXPORT entry \"") + bad + "\"");
  }
}

TEST_CASE("a pattern skips the master's variables that are not valid names, warning for each", "[env][security]") {
  // Kubernetes allows '.' and '-' in variable names; an environment can hold any byte but '='.
  const EnvMap env = {{"MY_A", "1"}, {"MY_B.C", "2"}, {"MY_D-E", "3"}, {std::string("MY_F\0G", 6), "4"},
                      {"HOROVOD_X.Y", "5"}, {"HOROVOD_CYCLE_TIME", "1"}};
  const ExportSelection sel = select_exports(env, {"MY_*"}, true);
  CHECK(names(sel.vars) == std::vector<std::string>{"HOROVOD_CYCLE_TIME", "MY_A"});
  REQUIRE(sel.warnings.size() == 4);
  CHECK(sel.warnings[0] == "--export HOROVOD_*: the master's variable \"HOROVOD_X.Y\" is not a valid name for the "
                           "ranks' environment; not forwarded");
  CHECK_THAT(sel.warnings[1], Catch::Contains("\"MY_B.C\""));
  CHECK_THAT(sel.warnings[2], Catch::Contains("\"MY_D-E\""));
  CHECK_THAT(sel.warnings[3], Catch::Contains("\"MY_F\\x00G\""));
  // Nothing valid matched: the request's own warning too.
  const ExportSelection none = select_exports({{"ONLY.BAD", "1"}}, {"ONLY*"}, false);
  CHECK(none.vars.empty());
  REQUIRE(none.warnings.size() == 2);
  CHECK_THAT(none.warnings[1], Catch::Contains("--export ONLY*: no such variable"));
}

TEST_CASE("a malformed NAME=VALUE export names the name only, escaped, never the value", "[env][security]") {
  struct Row {
    std::string request;
    std::string shown;  // how the name appears in the error
  };
  const Row rows[] = {
      {"=x", "\"\""},
      {"bad-name_TOKEN=hunter2", "\"bad-name_TOKEN\""},
      {"A B=hunter2", "\"A B\""},
      {"A\nerror: forged=hunter2", "\"A\\nerror: forged\""},
      {"A\r\x1b[2J=hunter2", "\"A\\r\\x1b[2J\""},
  };
  for (const auto& row : rows) {
    INFO(row.request);
    try {
      select_exports({}, {row.request}, false);
      FAIL("expected AgentError");
    } catch (const AgentError& e) {
      CHECK(e.exit_code == exit_code::kBadEnvironment);
      CHECK_THAT(e.message, Catch::Contains("has an invalid name " + row.shown));
      CHECK(e.message.find("hunter2") == std::string::npos);
      CHECK(e.message.find_first_of("\r\n\x1b") == std::string::npos);
    }
  }
}
