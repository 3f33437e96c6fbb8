// Restarts (restart_policy.h): which ends of an attempt are retried, the one log line per
// restart (attempt k of N+1, why, after how long), GJ_MAX_RESTARTS parsed by the settings table,
// and the restart variables every flavour passes to its ranks.
#include <catch2/catch.hpp>

#include <algorithm>

#include "exit_codes.h"
#include "mpiexec_argv.h"
#include "restart_policy.h"
#include "settings.h"
#include "test_support.h"

using namespace gj;
using namespace std::chrono_literals;
using Argv = std::vector<std::string>;

namespace {

const AttemptOutcome kRankFailed{AttemptEnd::RankFailed, exit_code::kRankFailed,
                                 "rank failure: rank 1 (local rank 1, pod w-0) killed by SIGKILL"};

}  // namespace

TEST_CASE("a rank failure is retried while attempts are left, with one line naming attempt, why and time",
          "[restart]") {
  const RestartDecision d = decide_restart(kRankFailed, 0, 2, 12345ms);
  CHECK(d.restart);
  CHECK(d.line == "attempt 1 of 3 failed after 12.3 s (rank failure: rank 1 (local rank 1, pod w-0) killed by "
                  "SIGKILL); starting attempt 2 of 3 once every host is ready");
  CHECK(decide_restart(kRankFailed, 1, 2, 1s).restart);
  const RestartDecision last = decide_restart(kRankFailed, 2, 2, 1s);
  CHECK_FALSE(last.restart);
  CHECK_THAT(last.line, Catch::Contains("attempt 3 of 3 failed") && Catch::Contains("it was the last"));
}

TEST_CASE("without --max-restarts a failure ends the job as before, with no extra line", "[restart]") {
  const RestartDecision d = decide_restart(kRankFailed, 0, 0, 1s);
  CHECK_FALSE(d.restart);
  CHECK(d.line.empty());
  CHECK(decide_restart({AttemptEnd::Stopped, 143, "the job was passed signal 15"}, 0, 0, 1s).line.empty());
}

TEST_CASE("a job failure mpiexec reports without a rank is retried, unless a program was not found", "[restart]") {
  CHECK(decide_restart({AttemptEnd::JobFailed, 3, "mpiexec exited with status 3"}, 0, 1, 1s).restart);
  for (int status : {exit_code::kNotFound, exit_code::kNotExecutable}) {
    const RestartDecision d = decide_restart({AttemptEnd::JobFailed, status, "mpiexec exited with status x"}, 0, 5, 1s);
    CHECK_FALSE(d.restart);
    CHECK_THAT(d.line, Catch::Contains("not restarted"));
  }
}

TEST_CASE("success and a stop are never retried", "[restart]") {
  CHECK_FALSE(decide_restart({AttemptEnd::Succeeded, 0, ""}, 0, 3, 1s).restart);
  const RestartDecision stop = decide_restart({AttemptEnd::Stopped, 143, "the job was passed signal 15"}, 0, 3, 1s);
  CHECK_FALSE(stop.restart);
  CHECK_THAT(stop.line, Catch::Contains("not restarted"));
}

TEST_CASE("GJ_MAX_RESTARTS and --max-restarts: a count, 0 by default", "[restart][settings]") {
  CHECK(default_settings().max_restarts == 0);
  CHECK(resolve_settings({{"GJ_MAX_RESTARTS", "3"}}).max_restarts == 3);
  CHECK(resolve_settings({{"GJ_MAX_RESTARTS", "3"}}, {{"GJ_MAX_RESTARTS", {"5"}}}).max_restarts == 5);
  test::require_agent_error([] { resolve_settings({{"GJ_MAX_RESTARTS", "-1"}}); }, exit_code::kBadEnvironment,
                            "GJ_MAX_RESTARTS");
  test::require_agent_error([] { resolve_settings({{"GJ_MAX_RESTARTS", "two"}}); }, exit_code::kBadEnvironment,
                            "\"two\"");
}

TEST_CASE("every attempt's ranks get its count and the maximum, in each flavour's own way", "[restart][argv]") {
  LaunchPlan plan;
  plan.hosts = {{"m.job", 2}};
  plan.np = 2;
  plan.command = {"python3", "train.py"};
  plan.exports = {{"GJ_RESTART_COUNT", std::string("9")}, {"NCCL_DEBUG", std::nullopt}};  // the user's is replaced
  const LaunchPlan second = plan_for_attempt(plan, 1, 2);
  MpiexecRequest req;
  req.flavour = MpiFlavour::OpenMpi4;
  const Argv ompi = build_mpiexec_command(second, req).argv;
  for (const char* want : {"GJ_RESTART_COUNT=1", "TORCHELASTIC_RESTART_COUNT=1", "TORCHELASTIC_MAX_RESTARTS=2"}) {
    const auto it = std::find(ompi.begin(), ompi.end(), want);
    REQUIRE(it != ompi.end());
    CHECK(*(it - 1) == "-x");
  }
  CHECK(std::find(ompi.begin(), ompi.end(), "GJ_RESTART_COUNT=9") == ompi.end());
  CHECK(std::find(ompi.begin(), ompi.end(), "NCCL_DEBUG") != ompi.end());
  req.flavour = MpiFlavour::Mpich;
  const Argv hydra = build_mpiexec_command(second, req).argv;
  const auto g = std::find(hydra.begin(), hydra.end(), "GJ_RESTART_COUNT");
  REQUIRE(g != hydra.end());
  CHECK(*(g - 1) == "-genv");
  CHECK(*(g + 1) == "1");
  const LaunchPlan first = plan_for_attempt(plan, 0, 0);
  req.flavour = MpiFlavour::OpenMpi4;
  const Argv a0 = build_mpiexec_command(first, req).argv;
  CHECK(std::find(a0.begin(), a0.end(), "TORCHELASTIC_RESTART_COUNT=0") != a0.end());
  CHECK(std::find(a0.begin(), a0.end(), "TORCHELASTIC_MAX_RESTARTS=0") != a0.end());
}
