// The rank environment (rank_env.h) against hostile inputs: MASTER_ADDR checked on
// the master, slot runs capped in total, empty torchrun variables treated as unset, kept values
// that contradict MPI warned about; MASTER_ADDR of an MPIJob whose hostfile says localhost.
#include <catch2/catch.hpp>

#include "exit_codes.h"
#include "mpijob.h"
#include "rank_env.h"
#include "test_support.h"

using namespace gj;

namespace {

const EnvMap kRank1of4 = {{"OMPI_COMM_WORLD_RANK", "1"},
                          {"OMPI_COMM_WORLD_SIZE", "4"},
                          {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                          {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}};

RankEnvSpec two_hosts() { return decode_rank_env_spec("m.job,29500,2*2"); }

std::optional<std::string> set_value(const RankEnv& r, const std::string& name) {
  for (const auto& [n, v] : r.set)
    if (n == name) return v;
  return std::nullopt;
}

}  // namespace

TEST_CASE("MASTER_ADDR from the master's environment must be a host name or an address", "[rank_env]") {
  for (const char* bad : {"a,b", "m\nERROR fake", "-oProxyCommand=x", "host name", "m.job:29500"}) {
    INFO(bad);
    test::require_agent_error([&] { master_rank_env_spec({2}, "m.job", {{"MASTER_ADDR", bad}}, 1, "x", nullptr); },
                              exit_code::kBadEnvironment, "MASTER_ADDR=");
  }
  for (const char* good : {"10.0.0.3", "fd00::3", "job-master-0.job", "localhost"})
    CHECK(master_rank_env_spec({2}, "m.job", {{"MASTER_ADDR", good}}, 1, "x", nullptr).master_addr == good);
}

TEST_CASE("the rank-exec spec: slot runs that add up past the cap are a usage error, not an allocation", "[rank_env]") {
  test::require_agent_error([] { decode_rank_env_spec("m,1,1*1000000,1*1000000"); }, exit_code::kUsage,
                            "hosts in all");
  std::string many = "m,1";
  for (int i = 0; i < 64; ++i) many += ",1*16000000";
  test::require_agent_error([&] { decode_rank_env_spec(many); }, exit_code::kUsage, "hosts in all");
  CHECK(decode_rank_env_spec("m,1,8*500000,4*500000").slots.size() == 1000000);
}

TEST_CASE("torchrun variables: empty means unset; a kept value that contradicts MPI is warned about", "[rank_env]") {
  EnvMap env = kRank1of4;
  env["RANK"] = "";
  const RankEnv empty = rank_environment(env, two_hosts());
  CHECK(set_value(empty, "RANK") == std::optional<std::string>("1"));
  CHECK(empty.warnings.empty());

  env["RANK"] = "0";
  env["WORLD_SIZE"] = "1";
  const RankEnv contradicting = rank_environment(env, two_hosts());
  CHECK(contradicting.kept == std::vector<std::string>{"RANK", "WORLD_SIZE"});
  REQUIRE(contradicting.warnings.size() == 1);
  CHECK_THAT(contradicting.warnings[0], Catch::Contains("RANK=\"0\" (MPI: 1), WORLD_SIZE=\"1\" (MPI: 4)"));
  CHECK(contradicting.warnings[0].find('\n') == std::string::npos);

  env["RANK"] = "1";
  env["WORLD_SIZE"] = "4";
  CHECK(rank_environment(env, two_hosts()).warnings.empty());  // the same values: nothing to say
}

TEST_CASE("MPIJob: a hostfile that lists the launcher as localhost gives the ranks its resolvable name", "[mpijob]") {
  CHECK(rendezvous_host("localhost", "mpj-launcher", "mpj-launcher.mpj.ns.svc") == "mpj-launcher.mpj.ns.svc");
  CHECK(rendezvous_host("mpj-launcher", "mpj-launcher", "mpj-launcher.mpj.ns.svc") == "mpj-launcher.mpj.ns.svc");
  CHECK(rendezvous_host("mpj-launcher.mpj.ns.svc", "mpj-launcher", "mpj-launcher.mpj.ns.svc") ==
        "mpj-launcher.mpj.ns.svc");
  CHECK(rendezvous_host("mpj-worker-0.mpj.ns.svc", "mpj-launcher", "mpj-launcher.mpj.ns.svc") ==
        "mpj-worker-0.mpj.ns.svc");
}
