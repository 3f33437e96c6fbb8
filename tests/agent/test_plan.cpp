#include <catch2/catch.hpp>

#include "exit_codes.h"
#include "job_spec.h"
#include "plan.h"
#include "test_support.h"

using namespace gj;
using Slots = std::vector<HostSlots>;

namespace {

const Invocation kScript{"/app/train", {"--epochs", "3"}, {}};

LaunchPlan plan_for(EnvMap env, const std::optional<std::string>& mpi_host) {
  if (mpi_host) env["MPI_HOST"] = *mpi_host;
  const JobSpec spec = parse_job_spec(env);
  std::optional<HostList> workers;
  if (spec.mpi_host) workers = parse_host_list("MPI_HOST", *spec.mpi_host);
  return plan_master(spec, workers, kScript, env);
}

}  // namespace

TEST_CASE("the four platform cases, as the example script computes them", "[plan]") {
  struct Case {
    const char* name;
    EnvMap env;
    std::optional<std::string> mpi_host;
    Layout layout;
    Slots hosts;
    std::int64_t np;
  };
  const std::string w2 = "job-worker-0.job,job-worker-1.job";
  const Case cases[] = {
      {"both CPU", test::master_env("4", "0", "8", "0", "2"), w2, Layout::BothCpu,
       {{"job-master-0.job", 4}, {"job-worker-0.job", 8}, {"job-worker-1.job", 8}}, 20},
      {"both CPU, quantities floored", test::master_env("4500m", "0", "2.5", "0", "2"), w2, Layout::BothCpu,
       {{"job-master-0.job", 4}, {"job-worker-0.job", 2}, {"job-worker-1.job", 2}}, 8},
      {"both CPU, no workers, MPI_HOST absent", test::master_env("2", "0", "1", "0", "0"), std::nullopt,
       Layout::BothCpu, {{"job-master-0.job", 2}}, 2},
      {"both CPU, no workers, MPI_HOST empty", test::master_env("2", "0", "1", "0", "0"), std::string(""),
       Layout::BothCpu, {{"job-master-0.job", 2}}, 2},
      {"both GPU", test::master_env("16", "8", "16", "8", "2"), w2, Layout::BothGpu,
       {{"job-master-0.job", 8}, {"job-worker-0.job", 8}, {"job-worker-1.job", 8}}, 24},
      {"both GPU, empty fields ignored", test::master_env("16", "4", "16", "4", "2"),
       std::string(",job-worker-0.job,,job-worker-1.job,"), Layout::BothGpu,
       {{"job-master-0.job", 4}, {"job-worker-0.job", 4}, {"job-worker-1.job", 4}}, 12},
      {"both GPU, mismatched counts follow the example", test::master_env("16", "2", "16", "4", "2"), w2,
       Layout::BothGpu, {{"job-master-0.job", 2}, {"job-worker-0.job", 4}, {"job-worker-1.job", 4}}, 10},
      {"master CPU + workers GPU: workers only", test::master_env("4", "0", "16", "8", "2"), w2,
       Layout::WorkersOnly, {{"job-worker-0.job", 8}, {"job-worker-1.job", 8}}, 16},
      {"master GPU + workers CPU: master only", test::master_env("16", "8", "16", "0", "2"), w2,
       Layout::MasterOnly, {{"job-master-0.job", 8}}, 8},
      {"master GPU + no workers: master only", test::master_env("16", "4", "1", "0", "0"), std::nullopt,
       Layout::MasterOnly, {{"job-master-0.job", 4}}, 4},
      {"master GPU, 0-CPU master still fine", test::master_env("500m", "1", "0", "0", "0"), std::nullopt,
       Layout::MasterOnly, {{"job-master-0.job", 1}}, 1},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    const LaunchPlan plan = plan_for(c.env, c.mpi_host);
    CHECK(plan.layout == c.layout);
    CHECK(plan.hosts == c.hosts);
    CHECK(plan.np == c.np);
    CHECK(plan.command == std::vector<std::string>{"/app/train", "--epochs", "3"});
  }
}

TEST_CASE("hosts_argument is MPI_HOSTS as the example prints it", "[plan]") {
  CHECK(hosts_argument({{"job-master-0.job", 4}, {"job-worker-0.job", 8}}) == "job-master-0.job:4,job-worker-0.job:8");
  CHECK(hosts_argument({}) == "");
}

TEST_CASE("warnings: mismatched GPUs and idle CPU workers", "[plan]") {
  const LaunchPlan mismatch = plan_for(test::master_env("16", "2", "16", "4", "1"), std::string("w-0.job"));
  REQUIRE(mismatch.warnings.size() == 1);
  CHECK_THAT(mismatch.warnings[0], Catch::Contains("GJ_TRAINING_MASTER_GPU_LIMIT=2 differs from GJ_TRAINING_WORKER_GPU_LIMIT=4"));
  const LaunchPlan idle = plan_for(test::master_env("16", "8", "16", "0", "2"), std::string("w-0.job,w-1.job"));
  REQUIRE(idle.warnings.size() == 1);
  CHECK_THAT(idle.warnings[0], Catch::Contains("all ranks run on the master"));
  CHECK(plan_for(test::master_env("4", "0", "4", "0", "1"), std::string("w-0.job")).warnings.empty());
}

TEST_CASE("bad plans: one line, exit class, nothing else", "[plan]") {
  struct Bad {
    const char* name;
    EnvMap env;
    std::optional<std::string> mpi_host;
    int code;
    const char* message;
  };
  const Bad cases[] = {
      {"count differs", test::master_env("4", "0", "4", "0", "3"), std::string("a.job,b.job"),
       exit_code::kBadEnvironment, "MPI_HOST lists 2 hosts but GJ_TRAINING_WORKER_REPLICAS=3"},
      {"hosts but no replicas", test::master_env("4", "0", "4", "0", "0"), std::string("a.job"),
       exit_code::kBadEnvironment, "MPI_HOST lists 1 hosts but GJ_TRAINING_WORKER_REPLICAS=0"},
      {"replicas but MPI_HOST absent", test::master_env("4", "0", "4", "0", "2"), std::nullopt,
       exit_code::kBadEnvironment, "GJ_TRAINING_WORKER_REPLICAS=2 but MPI_HOST is not set"},
      {"replicas but MPI_HOST empty", test::master_env("4", "0", "4", "8", "2"), std::string(",,"),
       exit_code::kBadEnvironment, "GJ_TRAINING_WORKER_REPLICAS=2 but MPI_HOST lists no hosts"},
      {"workers-only with 0 replicas: np 0", test::master_env("4", "0", "4", "8", "0"), std::nullopt,
       exit_code::kBadPlan, "MPI_NP=0"},
      {"master 0 CPU slots", test::master_env("500m", "0", "4", "0", "0"), std::nullopt, exit_code::kBadPlan,
       "GJ_TRAINING_MASTER_CPU_LIMIT=\"500m\" gives 0 slots"},
      {"master 0 CPU", test::master_env("0", "0", "4", "0", "0"), std::nullopt, exit_code::kBadPlan,
       "GJ_TRAINING_MASTER_CPU_LIMIT=\"0\" gives 0 slots"},
      {"worker 0 CPU slots", test::master_env("4", "0", "0.5", "0", "1"), std::string("a.job"), exit_code::kBadPlan,
       "GJ_TRAINING_WORKER_CPU_LIMIT=\"0.5\" gives 0 slots"},
      {"master host among workers", test::master_env("4", "0", "4", "0", "1"), std::string("job-master-0.job"),
       exit_code::kBadEnvironment, "lists the master host \"job-master-0.job\""},
      {"np overflows", test::master_env("4", "0", "4000000000", "0", "1"), std::string("a.job"), exit_code::kBadPlan,
       "MPI_NP would exceed"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    test::require_agent_error([&] { plan_for(c.env, c.mpi_host); }, c.code, c.message);
  }
  EnvMap bad_pod = test::master_env("4", "0", "4", "0", "0");
  bad_pod["GJ_TRAINING_POD_NAME"] = "pod;x";
  test::require_agent_error([&] { plan_for(bad_pod, std::nullopt); }, exit_code::kBadEnvironment,
                            "master host \"pod;x.job\"");
}

TEST_CASE("wait_for: every host, minus the master when it runs no sshd", "[plan]") {
  EnvMap env = test::master_env("4", "0", "4", "0", "1");
  CHECK(plan_for(env, std::string("w.job")).wait_for == std::vector<std::string>{"job-master-0.job", "w.job"});
  env["GJ_NO_SSHD"] = "1";
  CHECK(plan_for(env, std::string("w.job")).wait_for == std::vector<std::string>{"w.job"});
  env["GJ_MASTER_HOST"] = "localhost";
  env["GJ_TRAINING_WORKER_REPLICAS"] = "0";
  const LaunchPlan local = plan_for(env, std::string(""));
  CHECK(local.hosts == Slots{{"localhost", 4}});
  CHECK(local.wait_for.empty());
}

TEST_CASE("rank command: .py under the interpreter, args unchanged", "[plan]") {
  CHECK(rank_command({"/app/train.py", {"-x", "--", "a b"}, {}}, "python3") ==
        std::vector<std::string>{"python3", "/app/train.py", "-x", "--", "a b"});
  CHECK(rank_command({"/app/run.sh", {}, {}}, "python3") == std::vector<std::string>{"/app/run.sh"});
  CHECK(rank_command({"/app/train.pyc", {}, {}}, "py") == std::vector<std::string>{"/app/train.pyc"});
}

TEST_CASE("sshd plan: settings and the session environment", "[plan]") {
  AgentSettings s;
  s.sshd = "/opt/sshd";
  s.ssh_keygen = "/opt/keygen";
  s.state_dir = "/tmp/st";
  s.ssh_dir = "/keys";
  s.ssh_port = 2222;
  const std::vector<std::pair<std::string, std::string>> env = {{"NCCL_IB_HCA", "mlx5_0"}, {"PATH", "/bin"}};
  const SshdSetup setup = plan_sshd(s, env);
  CHECK(setup.sshd_path == "/opt/sshd");
  CHECK(setup.ssh_keygen == "/opt/keygen");
  CHECK(setup.state_dir == "/tmp/st");
  CHECK(setup.ssh_dir == "/keys");
  CHECK(setup.port == 2222);
  CHECK(setup.session_env == env);
  CHECK(worker_sshd_argv(setup) == std::vector<std::string>{"/opt/sshd", "-D", "-e", "-f", "/tmp/st/sshd_config"});
}

TEST_CASE("plan of 10,000 hosts", "[plan]") {
  EnvMap env = test::master_env("8", "8", "8", "8", "10000");
  std::string text;
  for (int i = 0; i < 10000; ++i) text += "job-worker-" + std::to_string(i) + ".job\n";
  const JobSpec spec = parse_job_spec(env);
  const LaunchPlan plan = plan_master(spec, parse_hosts_file("f", text), kScript, env);
  CHECK(plan.hosts.size() == 10001);
  CHECK(plan.np == 80008);
}
