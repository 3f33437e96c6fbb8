#include <catch2/catch.hpp>
#include <set>
#include <tuple>

#include "exit_codes.h"
#include "job_spec.h"
#include "test_support.h"

using namespace gj;

TEST_CASE("parse_job_spec reads the platform variables of a master", "[job_spec]") {
  EnvMap env = test::master_env("4000m", "0", "2.5", "0", "2");
  env["MPI_HOST"] = "job-worker-0.job,job-worker-1.job";
  const JobSpec spec = parse_job_spec(env);
  CHECK(spec.role == Role::Master);
  CHECK(spec.job_name == "job");
  CHECK(spec.pod_name == "job-master-0");
  CHECK(spec.master.cpu == 4);
  CHECK(spec.master.cpu_text == "4000m");
  CHECK(spec.worker.cpu == 2);
  CHECK(spec.worker.replicas == 2);
  CHECK(spec.master_host == "job-master-0.job");
  REQUIRE(spec.mpi_host.has_value());
  CHECK(*spec.mpi_host == "job-worker-0.job,job-worker-1.job");
}

TEST_CASE("MPI_HOST absent and empty are different", "[job_spec]") {
  EnvMap env = test::master_env("1", "0", "1", "0", "0");
  CHECK_FALSE(parse_job_spec(env).mpi_host.has_value());
  env["MPI_HOST"] = "";
  REQUIRE(parse_job_spec(env).mpi_host.has_value());
}

TEST_CASE("every GJ_TRAINING_* variable: missing, empty, non-numeric, negative, overflowing", "[job_spec]") {
  const char* numeric[] = {"GJ_TRAINING_MASTER_CPU_LIMIT", "GJ_TRAINING_MASTER_GPU_LIMIT",
                           "GJ_TRAINING_MASTER_REPLICAS",  "GJ_TRAINING_WORKER_CPU_LIMIT",
                           "GJ_TRAINING_WORKER_GPU_LIMIT", "GJ_TRAINING_WORKER_REPLICAS"};
  const std::pair<const char*, const char*> bad_values[] = {
      {"", "is empty"},
      {"two", "is not a"},
      {"-1", "is negative"},
      {"99999999999999999999", "is too large (overflows"},
  };
  for (const char* var : numeric) {
    for (const auto& [value, why] : bad_values) {
      INFO(var << "=" << value);
      EnvMap env = test::master_env("4", "0", "4", "0", "0");
      env[var] = value;
      test::require_agent_error([&] { parse_job_spec(env); }, exit_code::kBadEnvironment,
                                std::string(var) + "=\"" + value + "\" " + why);
    }
    INFO(var << " missing");
    EnvMap env = test::master_env("4", "0", "4", "0", "0");
    env.erase(var);
    test::require_agent_error([&] { parse_job_spec(env); }, exit_code::kBadEnvironment,
                              std::string(var) + " is not set");
  }
  for (const char* var : {"GJ_TRAINING_ROLE", "GJ_TRAINING_VC_JOB_NAME", "GJ_TRAINING_POD_NAME"}) {
    INFO(var);
    EnvMap env = test::master_env("4", "0", "4", "0", "0");
    env[var] = "";
    test::require_agent_error([&] { parse_job_spec(env); }, exit_code::kBadEnvironment, std::string(var) + "=\"\" is empty");
    env.erase(var);
    test::require_agent_error([&] { parse_job_spec(env); }, exit_code::kBadEnvironment, std::string(var) + " is not set");
  }
}

TEST_CASE("unknown role and master replicas other than 1", "[job_spec]") {
  for (const char* role : {"Master", "launcher", "worker ", "chief"}) {
    INFO(role);
    EnvMap env = test::master_env("4", "0", "4", "0", "0");
    env["GJ_TRAINING_ROLE"] = role;
    test::require_agent_error([&] { parse_job_spec(env); }, exit_code::kBadEnvironment,
                              std::string("GJ_TRAINING_ROLE=\"") + role + "\" is not a known role");
  }
  for (const char* replicas : {"0", "2", "10"}) {
    INFO(replicas);
    EnvMap env = test::master_env("4", "0", "4", "0", "0");
    env["GJ_TRAINING_MASTER_REPLICAS"] = replicas;
    test::require_agent_error([&] { parse_job_spec(env); }, exit_code::kBadEnvironment,
                              std::string("GJ_TRAINING_MASTER_REPLICAS=\"") + replicas + "\" but an MPI job has exactly 1 master");
  }
}

TEST_CASE("a worker needs only its role", "[job_spec]") {
  const JobSpec spec = parse_job_spec({{"GJ_TRAINING_ROLE", "worker"}, {"GJ_TRAINING_POD_NAME", "job-worker-3"}});
  CHECK(spec.role == Role::Worker);
  CHECK(spec.pod_name == "job-worker-3");
}

TEST_CASE("agent settings: defaults and overrides", "[job_spec]") {
  const AgentSettings d = resolve_settings({});
  CHECK(d.mpiexec == "mpiexec");
  CHECK_FALSE(d.mpi.has_value());
  CHECK(d.python == "python3");
  CHECK(d.sshd == "/usr/sbin/sshd");
  CHECK(d.state_dir == "/run/gj-mpirun");
  CHECK(d.ssh_dir == "/root/.ssh");
  CHECK(d.ssh_port == 22);
  CHECK(d.ready_timeout_s == 300);
  CHECK_FALSE(d.no_wait);
  CHECK(d.supervise == Supervise::Auto);
  CHECK(d.hostfile_mode == HostfileMode::Auto);
  CHECK(d.default_exports);

  const AgentSettings s = resolve_settings({{"GJ_MPI", "mpich"},
                                          {"GJ_SSH_PORT", "2222"},
                                          {"GJ_READY_TIMEOUT", "30"},
                                          {"GJ_NO_WAIT", "true"},
                                          {"GJ_SUPERVISE", "0"},
                                          {"GJ_HOSTFILE_MODE", "always"},
                                          {"GJ_EXPORT", "A,B=1,,C*"},
                                          {"GJ_LOG_LEVEL", "debug"}});
  CHECK(s.mpi == MpiFlavour::Mpich);
  CHECK(s.ssh_port == 2222);
  CHECK(s.ready_timeout_s == 30);
  CHECK(s.no_wait);
  CHECK(s.supervise == Supervise::Off);
  CHECK(s.hostfile_mode == HostfileMode::Always);
  CHECK(s.exports == std::vector<std::string>{"A", "B=1", "C*"});
  CHECK(s.log_level == "debug");
}

TEST_CASE("bad agent settings name the flag and the variable", "[job_spec]") {
  const std::tuple<const char*, const char*, const char*> cases[] = {
      {"GJ_MPI", "lam", "--mpi/GJ_MPI=\"lam\" is not one of"},
      {"GJ_SSH_PORT", "ssh", "--ssh-port/GJ_SSH_PORT=\"ssh\""},
      {"GJ_READY_TIMEOUT", "0", "--ready-timeout/GJ_READY_TIMEOUT=\"0\" must be at least 1 second"},
      {"GJ_READY_TIMEOUT", "5m", "--ready-timeout/GJ_READY_TIMEOUT=\"5m\" is not a non-negative integer"},
      {"GJ_SUPERVISE", "sometimes", "--supervise / --no-supervise/GJ_SUPERVISE=\"sometimes\" is not a boolean"},
      {"GJ_HOSTFILE_MODE", "big", "--hostfile-mode/GJ_HOSTFILE_MODE=\"big\" is not one of"},
      {"GJ_LOG_LEVEL", "loud", "--log-level/GJ_LOG_LEVEL=\"loud\" is not one of"},
      {"GJ_NO_WAIT", "2", "--no-wait/GJ_NO_WAIT=\"2\" is not a boolean"},
  };
  for (const auto& c : cases) {
    const char* const var = std::get<0>(c);  // not a structured binding: lambdas cannot capture one in C++17
    const char* const value = std::get<1>(c);
    INFO(var << "=" << value);
    test::require_agent_error([&] { resolve_settings({{var, value}}); }, exit_code::kBadEnvironment, std::get<2>(c));
  }
}

TEST_CASE("settings_table documents every variable once, with a meaning", "[job_spec]") {
  std::set<std::string> names;
  for (const auto& d : settings_table()) {
    INFO(d.variable);
    CHECK(names.insert(d.variable).second);
    CHECK(std::string(d.help).size() > 10);
  }
  for (const char* must : {"GJ_TRAINING_ROLE", "MPI_HOST", "GJ_MPIEXEC", "GJ_READY_TIMEOUT", "GJ_NO_WAIT",
                           "GJ_SSH_CHECK", "GJ_SUPERVISE", "GJ_PYTHON", "GJ_MPI", "GJ_HOSTS_FILE", "GJ_EXPORT",
                           "GJ_LOG_LEVEL", "GJ_SSHD", "GJ_STATE_DIR", "GJ_SSH_DIR"})
    CHECK(names.count(must) == 1);
}
