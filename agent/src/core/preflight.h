// What the pre-flight checks ask of each pod (docs/agent.md, "Pre-flight checks"), decided from
// the plan: which pods have a GPU limit to check, what the dry run says would be checked. Pure;
// the checks run in preflight_run.cpp (the app), the probes in sys/gpu_probe.h, sys/net_probe.h.
#pragma once

#include <string>
#include <vector>

#include "gpu_check.h"
#include "plan.h"
#include "settings.h"

namespace gj {

// The hidden modes of gj-mpirun the checks run on each pod (over ssh, or locally on the master).
inline constexpr const char* kPreflightFactsFlag = "--preflight-facts";  // prints the pod's facts (pod_facts.h)
inline constexpr const char* kPreflightNvmlFlag = "--preflight-nvml";    // the NVML part of it, in a child
inline constexpr const char* kPreflightNetFlag = "--preflight-net";      // one pod's network probe
inline constexpr const char* kGpuUseFlag = "--gpu-use";                  // a rank's GPU use (rank wrapper's child)

// One question per host of the plan: its GPU limit and the variable that gives it (0 in CPU
// layouts and under an MPIJob, whose hostfile gives slots, not GPUs).
std::vector<PodGpuAnswer> gpu_questions(const LaunchPlan& plan);

// Whether the network check has pods to measure: at least 2 hosts.
bool network_check_runs(const LaunchPlan& plan, const AgentSettings& settings);

// The dry run's lines ("# preflight: ..."): what would be checked, or why not.
std::vector<std::string> preflight_dry_run_lines(const LaunchPlan& plan, const AgentSettings& settings);

// GPU jobs with the rank environment (and GJ_PREFLIGHT not off): every rank logs NCCL's INIT/NET
// lines to <state dir>/nccl on its pod (rank_env.h, RankEnvSpec::nccl_log_dir), for the master's
// transport line (nccl_transport.h). Re-encodes the rank-exec command's spec.
void add_nccl_transport_log(LaunchPlan& plan, const AgentSettings& settings);

// [--preflight-net, <self>, <port>, <bytes>, <budget ms>, <addr,addr,...>, <targets>, <incoming>]
// and back (throws AgentError kUsage naming the bad argument); targets "1,3" or "-" for none.
struct NetProbeArgs {
  std::size_t self = 0;
  int port = 0;
  std::int64_t bytes = 0;
  std::int64_t budget_ms = 0;
  std::vector<std::string> addresses;
  std::vector<std::size_t> targets;
  std::size_t incoming = 0;
};
std::vector<std::string> net_probe_args(const NetProbeArgs& a);
NetProbeArgs parse_net_probe_args(const std::vector<std::string>& args);

// The network check's time budget per pod: fixed, whatever the job's size (each pod measures 3
// links at once with the others), so 64 pods take what 4 do.
inline constexpr std::int64_t kNetBudgetMs = 6000;
// Rounds in which the links behind a finding are measured again, alone, before it is believed:
// each round costs only the suspects' pods, and only when there are suspects.
inline constexpr int kNetRemeasures = 2;

}  // namespace gj
