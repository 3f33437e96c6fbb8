#include "preflight.h"

#include "net_check.h"

#include "agent_error.h"
#include "exit_codes.h"
#include "quote.h"
#include "rank_env.h"
#include "text.h"

namespace gj {

std::vector<PodGpuAnswer> gpu_questions(const LaunchPlan& plan) {
  std::vector<PodGpuAnswer> out;
  for (std::size_t i = 0; i < plan.hosts.size(); ++i) {
    PodGpuAnswer q;
    q.pod = plan.hosts[i].host;
    const bool master = i == 0 && (plan.layout == Layout::BothGpu || plan.layout == Layout::MasterOnly);
    switch (plan.layout) {
      case Layout::BothGpu:
      case Layout::WorkersOnly:
      case Layout::MasterOnly:
        q.limit = plan.hosts[i].slots;  // in a GPU layout a host's slots are its role's GPU limit
        q.limit_name = master ? "GJ_TRAINING_MASTER_GPU_LIMIT" : "GJ_TRAINING_WORKER_GPU_LIMIT";
        break;
      case Layout::BothCpu:
      case Layout::Hostfile:
        break;
    }
    out.push_back(q);
  }
  return out;
}

bool network_check_runs(const LaunchPlan& plan, const AgentSettings& settings) {
  return settings.preflight != PreflightMode::Off && plan.hosts.size() >= 2;
}

std::vector<std::string> preflight_dry_run_lines(const LaunchPlan& plan, const AgentSettings& s) {
  if (s.preflight == PreflightMode::Off) return {"preflight: off (GJ_PREFLIGHT=off): no GPU, network or NCCL check"};
  std::vector<std::string> out;
  std::vector<std::string> gpu;
  for (const auto& q : gpu_questions(plan))
    if (q.limit > 0) gpu.push_back(q.pod + " >= " + std::to_string(q.limit));
  if (gpu.empty()) out.push_back("preflight: GPUs: none to check (no GPU limit in this layout)");
  else
    out.push_back("preflight: GPUs: each pod's visible GPUs (NVML " + s.nvml_library + ", else " +
                  (s.gpu_root == "/" ? std::string() : s.gpu_root) + "/proc/driver/nvidia/gpus; CUDA_VISIBLE_DEVICES "
                  "applied) against its limit, and uncorrected ECC errors: " + join(gpu, ", ") +
                  "; a pod short of GPUs ends the job (exit 8)");
  if (network_check_runs(plan, s))
    out.push_back("preflight: network: " + std::to_string(plan.hosts.size()) + " pods, each to the next, the previous " +
                  "and the one across the ring: 10 round trips and 2 x " + std::to_string(s.preflight_bytes) +
                  " bytes per link on TCP port " + std::to_string(s.preflight_port) + ", at most " +
                  std::to_string(kNetBudgetMs / 1000) + " s; a pod or link below 1/3 of the median is " +
                  (s.preflight == PreflightMode::Strict ? "an error (GJ_PREFLIGHT=strict, exit 8)" : "a warning"));
  else out.push_back("preflight: network: not measured (one pod)");
  if (!gpu.empty())
    out.push_back("preflight: NCCL: ranks log NCCL's INIT/NET lines to <state dir>/nccl/ (NCCL_DEBUG=INFO, "
                  "NCCL_DEBUG_SUBSYS=INIT,NET) unless NCCL_DEBUG is set");
  return out;
}

void add_nccl_transport_log(LaunchPlan& plan, const AgentSettings& settings) {
  if (settings.preflight == PreflightMode::Off || !plan.rank_env) return;
  bool gpus = false;
  for (const auto& q : gpu_questions(plan)) gpus = gpus || q.limit > 0;
  if (!gpus || plan.command.size() < 3 || plan.command[1] != kRankExecFlag) return;
  plan.rank_env->nccl_log_dir = settings.state_dir + "/nccl";
  plan.command[2] = encode_rank_env_spec(*plan.rank_env);
}

std::vector<std::string> net_probe_args(const NetProbeArgs& a) {
  std::vector<std::string> targets;
  for (const auto t : a.targets) targets.push_back(std::to_string(t));
  return {kPreflightNetFlag,       std::to_string(a.self),      std::to_string(a.port),
          std::to_string(a.bytes), std::to_string(a.budget_ms), join(a.addresses, ","),
          targets.empty() ? "-" : join(targets, ","), std::to_string(a.incoming)};
}

NetProbeArgs parse_net_probe_args(const std::vector<std::string>& args) {
  const auto bad = [](const std::string& what) {
    return AgentError{exit_code::kUsage, "--preflight-net: " + what +
                                             "; usage: --preflight-net <self> <port> <bytes> <budget ms> <addr,addr,...> <targets> <incoming>"};
  };
  if (args.size() != 7) throw bad(std::to_string(args.size()) + " argument(s)");
  const auto number = [&](const std::string& s, const char* name) {
    if (s.empty() || s.size() > 12 || s.find_first_not_of("0123456789") != std::string::npos)
      throw bad(std::string(name) + " " + quoted_value(s) + " is not a number");
    return std::stoll(s);
  };
  NetProbeArgs a;
  a.self = static_cast<std::size_t>(number(args[0], "self"));
  a.port = static_cast<int>(number(args[1], "port"));
  a.bytes = number(args[2], "bytes");
  a.budget_ms = number(args[3], "budget");
  a.addresses = split(args[4], ',');
  if (args[5] != "-")
    for (const auto& t : split(args[5], ',')) {
      a.targets.push_back(static_cast<std::size_t>(number(t, "target")));
      if (a.targets.back() >= a.addresses.size()) throw bad("target " + t + " is not an index of the addresses");
    }
  a.incoming = static_cast<std::size_t>(number(args[6], "incoming"));
  if (a.self >= a.addresses.size()) throw bad("self " + args[0] + " is not an index of the " +
                                              std::to_string(a.addresses.size()) + " address(es)");
  if (a.port < 1 || a.port > 65535) throw bad("port " + args[1] + " out of range");
  return a;
}

}  // namespace gj
