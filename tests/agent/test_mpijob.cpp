#include <catch2/catch.hpp>

#include "exit_codes.h"
#include "job_spec.h"
#include "mpijob.h"
#include "test_support.h"

using namespace gj;
using Hosts = std::vector<HostSlots>;

TEST_CASE("MPIJob hostfile: both formats, launcher as worker, comments and blank lines", "[mpijob]") {
  const std::pair<const char*, Hosts> cases[] = {
      {"j-worker-0.j.ns.svc slots=4\nj-worker-1.j.ns.svc slots=4\n", {{"j-worker-0.j.ns.svc", 4}, {"j-worker-1.j.ns.svc", 4}}},
      {"j-worker-0.j.ns.svc:2\nj-worker-1.j.ns.svc:3", {{"j-worker-0.j.ns.svc", 2}, {"j-worker-1.j.ns.svc", 3}}},
      {"j-launcher.j.ns.svc slots=1\nj-worker-0.j.ns.svc slots=1\n", {{"j-launcher.j.ns.svc", 1}, {"j-worker-0.j.ns.svc", 1}}},
      {"localhost slots=2\nj-worker-0.j.ns.svc slots=2\n", {{"localhost", 2}, {"j-worker-0.j.ns.svc", 2}}},
      {"# generated\n\n  j-worker-0.j.ns.svc   slots=8 max_slots=8  # trailing\r\n\n", {{"j-worker-0.j.ns.svc", 8}}},
      {"j-worker-0.j.ns.svc\n", {{"j-worker-0.j.ns.svc", 1}}},
  };
  for (const auto& [text, want] : cases) {
    INFO(text);
    CHECK(parse_mpijob_hostfile("hostfile", text) == want);
  }
}

TEST_CASE("MPIJob hostfile: bad lines are rejected with their line number", "[mpijob]") {
  const std::pair<const char*, const char*> cases[] = {
      {"a.j slots=1\n\nb.j slots=two\n", "hostfile line 3 \"b.j slots=two\": slots \"two\" is not a whole number"},
      {"a.j:0\n", "hostfile line 1 \"a.j:0\": slots must be between 1"},
      {"a.j:\n", "hostfile line 1 \"a.j:\": slots \"\" is not a whole number"},
      {"a.j slots=2 cpus\n", "line 1 \"a.j slots=2 cpus\": \"cpus\" is not key=value"},
      {"a.j colour=red\n", "unknown key \"colour\""},
      {"a.j:2 slots=2\n", "`host:N` takes no further words"},
      {"a.j:2\nbad_host:2\n", "hostfile line 2 \"bad_host\" is not a valid DNS host name"},
      {"a.j:2\nA.J:2\n", "lists \"A.J\" twice (line 1 and line 2)"},
      {"a.j slots=99999999999\n", "slots must be between 1 and"},
  };
  for (const auto& [text, want] : cases) {
    INFO(text);
    test::require_agent_error([&, &text = text] { parse_mpijob_hostfile("hostfile", text); }, exit_code::kBadEnvironment, want);
  }
}

TEST_CASE("MPIJob: the operator's variables name the flavour and the hostfile", "[mpijob]") {
  CHECK(mpijob_env({}).hostfile == "/etc/mpi/hostfile");
  CHECK_FALSE(mpijob_env({}).flavour.has_value());
  const MpiJobEnv o = mpijob_env({{"OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"}});
  CHECK(o.flavour == MpiFlavour::OpenMpi4);
  CHECK(o.hostfile_variable == "OMPI_MCA_orte_default_hostfile");
  CHECK(mpijob_env({{"HYDRA_HOST_FILE", "/h"}}).flavour == MpiFlavour::Mpich);
  CHECK(mpijob_env({{"HYDRA_HOST_FILE", "/h"}}).hostfile == "/h");
  CHECK(mpijob_env({{"I_MPI_HYDRA_HOST_FILE", "/h"}}).flavour == MpiFlavour::Intel);
}

TEST_CASE("MPIJob: roles from K_MPI_JOB_ROLE; GJ_TRAINING_ROLE wins and says so", "[mpijob]") {
  const JobSpec l = parse_job_spec({{"K_MPI_JOB_ROLE", "launcher"}, {"HOSTNAME", "j-launcher"}});
  CHECK(l.platform == Platform::MpiJob);
  CHECK(l.role == Role::Master);
  CHECK(l.pod_name == "j-launcher");
  CHECK(parse_job_spec({{"K_MPI_JOB_ROLE", "worker"}}).role == Role::Worker);
  const JobSpec both = parse_job_spec({{"K_MPI_JOB_ROLE", "launcher"}, {"GJ_TRAINING_ROLE", "worker"}});
  CHECK(both.platform == Platform::Volcano);
  CHECK_THAT(both.platform_note, Catch::Contains("both GJ_TRAINING_ROLE and K_MPI_JOB_ROLE are set"));
  test::require_agent_error([] { parse_job_spec({{"K_MPI_JOB_ROLE", "driver"}}); }, exit_code::kBadEnvironment,
                            "K_MPI_JOB_ROLE=\"driver\" is not a known role");
  test::require_agent_error([] { parse_job_spec({}); }, exit_code::kBadEnvironment,
                            "GJ_TRAINING_ROLE is not set (nor K_MPI_JOB_ROLE");
}

TEST_CASE("MPIJob plan: np is the sum of slots or the user's -np; the gate skips this pod", "[mpijob]") {
  JobSpec spec = parse_job_spec({{"K_MPI_JOB_ROLE", "launcher"}});
  spec.pod_name = "j-launcher";
  const Hosts hosts = {{"j-launcher.j.ns.svc", 1}, {"j-worker-0.j.ns.svc", 2}, {"j-worker-1.j.ns.svc", 2}};
  Invocation inv;
  inv.script = "/app/t";
  const LaunchPlan p = plan_mpijob(spec, "hf", hosts, inv, {});
  CHECK(p.np == 5);
  CHECK(p.hosts == hosts);
  CHECK(p.wait_for == std::vector<std::string>{"j-worker-0.j.ns.svc", "j-worker-1.j.ns.svc"});
  CHECK(launcher_host_name("j-launcher", hosts) == "j-launcher.j.ns.svc");
  CHECK(launcher_host_name("j-launcher", {{"j-worker-0.j.ns.svc", 1}}) == "j-launcher.j.ns.svc");
  inv.mpi_args = {"--bind-to", "none", "-np", "3"};
  const LaunchPlan q = plan_mpijob(spec, "hf", hosts, inv, {});
  CHECK(q.np == 3);
  CHECK(q.mpi_args == std::vector<std::string>{"--bind-to", "none"});
  inv.mpi_args = {"-n", "6"};
  test::require_agent_error([&] { plan_mpijob(spec, "hf", hosts, inv, {}); }, exit_code::kBadPlan,
                            "-np 6 but hf has 5 slots");
  inv.mpi_args = {};
  test::require_agent_error([&] { plan_mpijob(spec, "hf", {}, inv, {}); }, exit_code::kBadPlan, "hf lists no hosts");
}
