// CPU binding and threads per rank (cpu_binding.h, add_cpu_policy, the rank side in rank_env.h,
// the argv words per flavour, the dry run) and the cgroup files' parsers (cgroup_cpu.h).
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>

#include "cgroup_cpu.h"
#include "cpu_binding.h"
#include "dry_run.h"
#include "job_spec.h"
#include "mpiexec_argv.h"
#include "plan.h"
#include "rank_env.h"
#include "test_support.h"

using namespace gj;
using Argv = std::vector<std::string>;

namespace {

bool contains(const Argv& argv, const Argv& run) {
  return std::search(argv.begin(), argv.end(), run.begin(), run.end()) != argv.end();
}

std::string joined(const Argv& argv) {
  std::string out;
  for (const auto& w : argv) out += (out.empty() ? "" : " ") + w;
  return out;
}

// The words each flavour gets for "no binding".
const std::pair<MpiFlavour, Argv> kBindNone[] = {
    {MpiFlavour::OpenMpi4, {"--bind-to", "none"}},
    {MpiFlavour::OpenMpi5, {"--bind-to", "none"}},
    {MpiFlavour::Mpich, {"-bind-to", "none"}},
    {MpiFlavour::Intel, {"-genv", "I_MPI_PIN", "off"}},
};

struct Job {
  JobSpec spec;
  LaunchPlan plan;
};

// A planned Volcano job with its CPU policy; master_cpu etc. as the platform writes them.
Job planned(const std::string& mcpu, const std::string& mgpu, const std::string& wcpu, const std::string& wgpu,
            const std::string& replicas, const std::string& hosts, const CpuFacts& facts, EnvMap extra = {},
            std::vector<std::string> mpi_args = {}) {
  EnvMap env = test::master_env(mcpu, mgpu, wcpu, wgpu, replicas);
  env["MPI_HOST"] = hosts;
  for (auto& [k, v] : extra) env[k] = v;
  Job j{parse_job_spec(env), {}};
  Invocation inv{"/app/train.py", {}, std::move(mpi_args)};
  j.plan = plan_master(j.spec, parse_host_list("MPI_HOST", hosts), inv, env);
  add_cpu_policy(j.plan, j.spec, j.spec.master_host, env, facts);
  return j;
}

MpiexecRequest request(MpiFlavour f) {
  MpiexecRequest r;
  r.flavour = f;
  r.hostfile_path = "/run/gj/hostfile";
  return r;
}

}  // namespace

TEST_CASE("pod CPU allocation: the platform's limit, lowered to the cgroup quota where smaller", "[cpu]") {
  struct Case {
    std::int64_t limit;
    std::optional<double> quota;
    std::optional<std::int64_t> want;
  };
  const Case cases[] = {
      {4, std::nullopt, 4}, {4, 2.5, 2},           {4, 8.0, 4},         {0, 3.9, 3},
      {0, std::nullopt, std::nullopt},             {0, 0.5, 0},         {-1, std::nullopt, std::nullopt},
      {2, 0.0, 2},  // a zero quota is not one the kernel writes: ignored
  };
  for (const auto& c : cases) {
    INFO("limit " << c.limit << " quota " << c.quota.value_or(-1));
    CHECK(pod_cpu_allocation(c.limit, c.quota) == c.want);
  }
}

TEST_CASE("threads per rank: allocation / ranks, at least 1", "[cpu]") {
  const std::array<std::int64_t, 3> cases[] = {{8, 2, 4}, {8, 3, 2}, {1, 4, 1}, {0, 2, 1}, {16, 1, 16}, {5, 0, 5}};
  for (const auto& [alloc, ranks, want] : cases) {
    INFO(alloc << " CPUs / " << ranks << " ranks");
    CHECK(threads_per_rank(alloc, ranks) == want);
  }
}

TEST_CASE("a binding the user asks for is recognised in mpiexec words and the environment", "[cpu]") {
  const std::pair<Argv, std::string> words[] = {
      {{"--bind-to", "core"}, "--bind-to core"},
      {{"-bind-to", "socket"}, "-bind-to socket"},
      {{"--bind-to=hwthread"}, "--bind-to=hwthread"},
      {{"--bind-to-core"}, "--bind-to-core"},
      {{"-x", "A=1", "--cpu-bind", "map_cpu:0"}, "--cpu-bind map_cpu:0"},
      {{"--cpu-set", "0,1"}, "--cpu-set 0,1"},
      {{"--cpu-list", "2,3"}, "--cpu-list 2,3"},
      {{"--rankfile", "/etc/rf"}, "--rankfile /etc/rf"},
      {{"-binding", "rr"}, "-binding rr"},
      {{"--mca", "hwloc_base_binding_policy", "core"}, "hwloc_base_binding_policy"},
      {{"--prtemca", "hwloc_default_binding_policy", "none"}, "hwloc_default_binding_policy"},
      {{"-genv", "I_MPI_PIN_DOMAIN", "omp"}, "I_MPI_PIN_DOMAIN"},
      {{"-genv", "I_MPI_PIN=0"}, "I_MPI_PIN=0"},
      {{"--map-by", "slot", "-x", "BIND=1", "--report-bindings"}, ""},
      {{"--bind", "x"}, ""},
      {{}, ""},
  };
  for (const auto& [argv, want] : words) {
    INFO(joined(argv));
    CHECK(user_binding(argv, {}) == want);
  }
  const std::pair<EnvMap, std::string> envs[] = {
      {{{"OMPI_MCA_hwloc_base_binding_policy", "core"}}, "OMPI_MCA_hwloc_base_binding_policy"},
      {{{"PRTE_MCA_hwloc_default_binding_policy", "core"}}, "PRTE_MCA_hwloc_default_binding_policy"},
      {{{"HYDRA_BINDING", "core"}}, "HYDRA_BINDING"},
      {{{"I_MPI_PIN", "1"}}, "I_MPI_PIN"},
      {{{"I_MPI_PIN_PROCESSOR_LIST", "0-3"}}, "I_MPI_PIN_PROCESSOR_LIST"},
      {{{"HYDRA_BINDING", ""}}, ""},  // empty means unset
      {{{"OMP_PROC_BIND", "true"}}, ""},
  };
  for (const auto& [env, want] : envs) {
    INFO(env.begin()->first);
    CHECK(user_binding({}, env) == want);
  }
}

TEST_CASE("binding decision: off unless this pod owns its CPUs and runs every rank; the user's wins", "[cpu]") {
  struct Case {
    const char* what;
    Argv mpi_args;
    CpuFacts facts;
    std::optional<std::int64_t> allocation;
    bool elsewhere;
    BindingMode want;
    const char* reason_has;
  };
  const Case cases[] = {
      {"shared node: cpuset 64, limit 4", {}, {64, 4.0}, 4, false, BindingMode::None, "cpuset of 64 CPU(s), allocation 4"},
      {"static CPU manager: cpuset 4, limit 4", {}, {4, 4.0}, 4, false, BindingMode::FlavourDefault, "owns them"},
      {"exclusive here, ranks elsewhere too", {}, {4, 4.0}, 4, true, BindingMode::None, "other pods"},
      {"allocation unknown", {}, {4, std::nullopt}, std::nullopt, false, BindingMode::None, "CPU allocation is not known"},
      {"cpuset unknown", {}, {std::nullopt, std::nullopt}, 4, false, BindingMode::None, "cpuset is not known"},
      {"user binds on a shared node", {"--bind-to", "core"}, {64, 4.0}, 4, true, BindingMode::User, "--bind-to core"},
      {"user unbinds in an exclusive pod", {"--bind-to", "none"}, {4, 4.0}, 4, false, BindingMode::User, "yours"},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    const BindingChoice b = choose_binding(c.mpi_args, {}, c.facts, c.allocation, c.elsewhere);
    CHECK(b.mode == c.want);
    CHECK_THAT(b.reason, Catch::Contains(c.reason_has));
  }
}

TEST_CASE("argv per flavour: binding off by default, kept for an exclusive pod, the user's left alone", "[cpu][argv]") {
  const CpuFacts shared{2, std::nullopt};
  const CpuFacts exclusive{8, 8.0};
  for (const auto& [flavour, none_words] : kBindNone) {
    INFO(to_string(flavour));
    // Default: master + 2 workers on CPU, the node's 2 cores shared.
    const Job def = planned("1", "0", "1", "0", "2", "w-0.job,w-1.job", shared);
    CHECK(def.plan.binding.mode == BindingMode::None);
    CHECK(contains(build_mpiexec_command(def.plan, request(flavour)).argv, none_words));
    // The user's binding: nothing of ours, their words once, in their place before the script.
    const Argv user_words = flavour == MpiFlavour::Intel ? Argv{"-genv", "I_MPI_PIN_DOMAIN", "core"}
                            : flavour == MpiFlavour::Mpich ? Argv{"-bind-to", "core"}
                                                           : Argv{"--bind-to", "core"};
    const Job user = planned("1", "0", "1", "0", "2", "w-0.job,w-1.job", shared, {}, user_words);
    CHECK(user.plan.binding.mode == BindingMode::User);
    const Argv user_argv = build_mpiexec_command(user.plan, request(flavour)).argv;
    CHECK_FALSE(contains(user_argv, none_words));
    CHECK(contains(user_argv, user_words));
    CHECK(std::count(user_argv.begin(), user_argv.end(), user_words[1]) == 1);
    // Exclusive cpuset (8 CPUs, limit 8), every rank on this pod: mpiexec binds within it.
    const Job own = planned("8", "8", "8", "0", "0", "", exclusive);
    CHECK(own.plan.binding.mode == BindingMode::FlavourDefault);
    const Argv own_argv = build_mpiexec_command(own.plan, request(flavour)).argv;
    CHECK_FALSE(contains(own_argv, none_words));
    CHECK(std::find(own_argv.begin(), own_argv.end(), "none") == own_argv.end());
  }
}

TEST_CASE("threads per host: each role's CPU limit / its slots; this pod's also lowered to its quota", "[cpu]") {
  // GPU job: 1 rank per GPU, master 16 CPUs for 2 GPUs, workers 12 CPUs for 2 GPUs.
  const Job gpu = planned("16", "2", "12", "2", "2", "w-0.job,w-1.job", {64, std::nullopt});
  CHECK(gpu.plan.pod_cpus == std::vector<std::int64_t>{16, 12, 12});
  CHECK(planned_threads(gpu.plan, 0) == 8);
  CHECK(planned_threads(gpu.plan, 1) == 6);
  CHECK(threads_summary(gpu.plan) ==
        "OMP_NUM_THREADS=8 on job-master-0.job (16 CPU(s) / 2 rank(s)), OMP_NUM_THREADS=6 on each of 2 hosts like "
        "w-0.job (12 CPU(s) / 2 rank(s))");
  // The master's cgroup quota (6 CPUs) is below its limit.
  const Job quota = planned("16", "2", "12", "2", "2", "w-0.job,w-1.job", {64, 6.5});
  CHECK(quota.plan.pod_cpus == std::vector<std::int64_t>{6, 12, 12});
  CHECK(planned_threads(quota.plan, 0) == 3);
  // More ranks than CPUs: 1.
  const Job few = planned("1", "4", "1", "4", "1", "w-0.job", {64, std::nullopt});
  CHECK(planned_threads(few.plan, 0) == 1);
  // The user's value wins and is what the dry run shows.
  const Job user = planned("16", "2", "12", "2", "1", "w-0.job", {64, std::nullopt}, {{"OMP_NUM_THREADS", "3"}});
  CHECK(user.plan.user_threads == std::optional<std::string>("3"));
  CHECK_THAT(threads_summary(user.plan), Catch::StartsWith("OMP_NUM_THREADS=3 (yours"));
}

TEST_CASE("without the rank wrapper: one OMP_NUM_THREADS for all is exported, differing ones warned about", "[cpu]") {
  const Job same = planned("8", "2", "8", "2", "1", "w-0.job", {64, std::nullopt}, {{"GJ_RANK_ENV", "0"}});
  REQUIRE_FALSE(same.spec.settings.rank_env);
  REQUIRE_FALSE(same.plan.exports.empty());
  CHECK(same.plan.exports.back().name == "OMP_NUM_THREADS");
  CHECK(same.plan.exports.back().value == std::optional<std::string>("4"));
  const Job differ = planned("8", "2", "4", "2", "1", "w-0.job", {64, std::nullopt}, {{"GJ_RANK_ENV", "0"}});
  for (const auto& v : differ.plan.exports) CHECK(v.name != "OMP_NUM_THREADS");
  REQUIRE_FALSE(differ.plan.warnings.empty());
  CHECK_THAT(differ.plan.warnings.back(), Catch::Contains("OMP_NUM_THREADS is left unset"));
}

TEST_CASE("the rank sets OMP_NUM_THREADS from its host's CPUs, its own quota and its local ranks", "[cpu][rank_env]") {
  RankEnvSpec spec;
  spec.master_addr = "m.job";
  spec.master_port = 29500;
  spec.slots = {2, 4, 4};
  spec.cpus = {16, 8, 8};
  CHECK(encode_rank_env_spec(spec) == "m.job,29500,2/16*1,4/8*2");
  CHECK(decode_rank_env_spec("m.job,29500,2/16*1,4/8*2") == spec);
  RankEnvSpec no_cpus = decode_rank_env_spec("m.job,29500,2*1,4*2");
  CHECK(no_cpus.cpus == std::vector<std::int64_t>{0, 0, 0});
  CHECK(encode_rank_env_spec(no_cpus) == "m.job,29500,2*1,4*2");

  const auto threads = [&](const RankEnvSpec& s, EnvMap env, const CpuFacts& facts) -> std::optional<std::string> {
    const RankEnv re = rank_environment(env, s, facts);
    for (const auto& [name, value] : re.set)
      if (name == "OMP_NUM_THREADS") return value;
    return std::nullopt;
  };
  const EnvMap rank3 = {{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "10"},
                        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}};
  CHECK(threads(spec, rank3, {}) == std::optional<std::string>("2"));              // 8 CPUs / 4 ranks
  CHECK(threads(spec, rank3, {64, 4.0}) == std::optional<std::string>("1"));       // quota 4 / 4 ranks
  CHECK(threads(no_cpus, rank3, {64, 12.0}) == std::optional<std::string>("3"));   // MPIJob: quota only
  CHECK(threads(no_cpus, rank3, {64, std::nullopt}) == std::nullopt);              // nothing known: unset
  EnvMap user = rank3;
  user["OMP_NUM_THREADS"] = "7";
  CHECK(threads(spec, user, {}) == std::nullopt);
  CHECK(rank_environment(user, spec).kept == std::vector<std::string>{"OMP_NUM_THREADS"});
}

TEST_CASE("dry run says which binding and why, and the threads per host", "[cpu][dry_run]") {
  const Job j = planned("16", "2", "12", "2", "1", "w-0.job", {64, std::nullopt});
  const MpiexecCommand cmd = build_mpiexec_command(j.plan, request(MpiFlavour::OpenMpi4));
  const std::string text = master_dry_run_text({j.plan, cmd, MpiFlavour::OpenMpi4, "--mpi", false});
  CHECK_THAT(text, Catch::Contains("\n# cpu binding: off, so that ranks of pods sharing a node are not pinned to the "
                                   "same cores (ranks run on other pods"));
  CHECK_THAT(text, Catch::Contains("\n# threads: OMP_NUM_THREADS=8 on job-master-0.job (16 CPU(s) / 2 rank(s)), "
                                   "OMP_NUM_THREADS=6 on w-0.job (12 CPU(s) / 2 rank(s))\n"));
  const std::string json = master_dry_run_json({j.plan, cmd, MpiFlavour::OpenMpi4, "--mpi", false});
  CHECK_THAT(json, Catch::Contains("{\"host\":\"job-master-0.job\",\"slots\":2,\"omp_num_threads\":8}"));
  CHECK_THAT(json, Catch::Contains("{\"host\":\"w-0.job\",\"slots\":2,\"omp_num_threads\":6}"));
  CHECK_THAT(json, Catch::Contains("\"binding\":{\"mode\":\"none\",\"reason\":\"off, so that"));
}

TEST_CASE("cgroup CPU files: v2 cpu.max, v1 cfs quota and period, the process's cgroup", "[cpu][cgroup]") {
  struct Max {
    const char* text;
    bool limited;
    double cpus;
    bool problem;
  };
  const Max maxes[] = {
      {"max 100000\n", false, 0, false}, {"150000 100000\n", true, 1.5, false}, {"400000 100000", true, 4, false},
      {"50000 100000\n", true, 0.5, false}, {"", false, 0, true},             {"max\n", false, 0, true},
      {"-1 100000\n", false, 0, true},   {"100000 0\n", false, 0, true},      {"1 2 3\n", false, 0, true},
  };
  for (const auto& m : maxes) {
    INFO(m.text);
    const CpuQuota q = parse_cpu_max(m.text);
    CHECK(q.limited == m.limited);
    CHECK(q.cpus == Approx(m.cpus));
    CHECK(q.problem.empty() == !m.problem);
  }
  CHECK(parse_cfs_quota("-1\n", "100000\n").limited == false);
  CHECK(parse_cfs_quota("-1\n", "100000\n").problem.empty());
  CHECK(parse_cfs_quota("250000\n", "100000\n").cpus == Approx(2.5));
  CHECK_FALSE(parse_cfs_quota("lots\n", "100000\n").problem.empty());
  CHECK_FALSE(parse_cfs_quota("1000\n", "\n").problem.empty());

  const auto v2 = cpu_cgroup_path("0::/kubepods/pod1/c1\n");
  REQUIRE(v2);
  CHECK(v2->v2);
  CHECK(v2->path == "/kubepods/pod1/c1");
  const auto v1 = cpu_cgroup_path("12:memory:/k/m\n4:cpu,cpuacct:/k/c\n1:name=systemd:/k/s\n");
  REQUIRE(v1);
  CHECK_FALSE(v1->v2);
  CHECK(v1->path == "/k/c");
  CHECK(cpu_cgroup_path("3:cpuset:/x\n0::/y\n")->path == "/y");  // hybrid: the v2 entry
  CHECK_FALSE(cpu_cgroup_path("garbage\n").has_value());
}
