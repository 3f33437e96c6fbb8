// Environment parser and planner: env map -> JobSpec -> LaunchPlan, as main() runs them.
// Input: "NAME=VALUE" lines (C escapes decoded, so values can hold newlines and any byte; a
// later line overrides an earlier one, as setenv would).
// Invariants beyond "no crash":
//  - a rejection is an AgentError with a documented pre-launch exit code (usage, environment
//    or plan) and a one-line message;
//  - an accepted master plan has np > 0 and np == the sum of its hosts' slots, every host a
//    valid DNS name, no host twice, slots > 0, the master first when it takes ranks and
//    absent when it does not (the platform's four cases), the workers in MPI_HOST order;
//  - the rank command is the invocation, unchanged (python prepended for .py only);
//  - every forwarded variable has an identifier name (it follows -x/-genv as one word);
//  - a worker's session environment holds identifiers only and no value with a newline.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "agent_error.h"
#include "exit_codes.h"
#include "fuzz_check.h"
#include "hosts.h"
#include "job_spec.h"
#include "plan.h"
#include "session_env.h"

namespace {

using gj::fuzz::is_valid_dns_name;

bool is_identifier(const std::string& s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (const char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

void check_error(const gj::AgentError& e, const std::string& input) {
  namespace ec = gj::exit_code;
  GJ_FUZZ_CHECK(e.exit_code == ec::kUsage || e.exit_code == ec::kBadEnvironment || e.exit_code == ec::kBadPlan,
                "undocumented exit code " + std::to_string(e.exit_code) + ": " + e.message + " for " + input);
  GJ_FUZZ_CHECK(!e.message.empty(), input);
  GJ_FUZZ_CHECK(e.message.find_first_of("\n\r") == std::string::npos, "multi-line error: " + e.message);
}

void check_master_plan(const gj::JobSpec& spec, const std::optional<gj::HostList>& workers,
                       const gj::Invocation& inv, const gj::LaunchPlan& plan, const std::string& input) {
  GJ_FUZZ_CHECK(plan.np > 0, input);
  std::int64_t sum = 0;
  std::set<std::string> seen;
  for (const auto& h : plan.hosts) {
    GJ_FUZZ_CHECK(is_valid_dns_name(h.host), "invalid host in plan: " + h.host);
    GJ_FUZZ_CHECK(seen.insert(h.host).second, "host twice in plan: " + h.host);
    GJ_FUZZ_CHECK(h.slots > 0, "host without slots: " + h.host);
    sum += h.slots;
  }
  GJ_FUZZ_CHECK(plan.np == sum, "np " + std::to_string(plan.np) + " != sum of slots " + std::to_string(sum) + " for " + input);

  const bool master_gpu = spec.master.gpu > 0;
  const bool worker_gpu = spec.worker.gpu > 0;
  const bool master_used = !(!master_gpu && worker_gpu);  // platform case 3: CPU master, GPU workers
  const bool workers_used = !(master_gpu && !worker_gpu);  // platform case 4: GPU master, CPU workers
  std::vector<std::string> expected;
  if (master_used) expected.push_back(spec.master_host);
  if (workers_used && workers) expected.insert(expected.end(), workers->hosts.begin(), workers->hosts.end());
  std::vector<std::string> got;
  for (const auto& h : plan.hosts) got.push_back(h.host);
  GJ_FUZZ_CHECK(got == expected, "plan hosts are not [master when used] + MPI_HOST in order: " + input);
  const std::int64_t master_slots = (master_gpu || worker_gpu) ? spec.master.gpu : spec.master.cpu;
  const std::int64_t worker_slots = (master_gpu || worker_gpu) ? spec.worker.gpu : spec.worker.cpu;
  for (std::size_t i = 0; i < plan.hosts.size(); ++i) {
    const bool is_master = master_used && i == 0;
    GJ_FUZZ_CHECK(plan.hosts[i].slots == (is_master ? master_slots : worker_slots), "slots: " + input);
  }

  GJ_FUZZ_CHECK(plan.command == gj::rank_command(inv, spec.settings.python), "rank command changed: " + input);
  GJ_FUZZ_CHECK(plan.command.back() == inv.script_args.back(), input);
  for (const auto& v : plan.exports) {
    GJ_FUZZ_CHECK(is_identifier(v.name), "forwarded variable name is not an identifier: " + v.name);
    if (v.value) GJ_FUZZ_CHECK(v.value->find('\n') == std::string::npos, "forwarded value has a newline: " + v.name);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  gj::EnvMap env;
  for (auto& [name, value] : gj::fuzz::parse_env_lines(input)) env[name] = value;

  // Hostile script arguments: they must reach the rank command unchanged and never become
  // mpiexec options (fuzz_mpiexec_argv checks the argv side).
  const gj::Invocation inv{"/opt/job/train.py", {"-oProxyCommand=x", "--", "$(id)", "last"}, {}};
  try {
    const gj::JobSpec spec = gj::parse_job_spec(env);
    if (spec.role == gj::Role::Worker) {
      const gj::EnvList pod_env(env.begin(), env.end());
      const auto setup = gj::plan_sshd(spec.settings, gj::filter_session_env(pod_env).kept);
      for (const auto& [name, value] : setup.session_env) {
        GJ_FUZZ_CHECK(is_identifier(name), "session variable name is not an identifier: " + name);
        GJ_FUZZ_CHECK(value.find('\n') == std::string::npos, "session value with a newline: " + name);
      }
      return 0;
    }
    std::optional<gj::HostList> workers;
    if (spec.mpi_host) workers = gj::parse_host_list("MPI_HOST", *spec.mpi_host);
    const auto plan = gj::plan_master(spec, workers, inv, env);
    check_master_plan(spec, workers, inv, plan, input);
  } catch (const gj::AgentError& e) {
    check_error(e, input);
  }
  return 0;
}
