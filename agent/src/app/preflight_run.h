// The pre-flight checks as the master runs them, between the readiness gate and mpiexec, and the
// hidden modes of gj-mpirun they start on each pod (docs/agent.md, "Pre-flight checks").
//
// How the master learns each pod's GPUs: it runs `gj-mpirun --preflight-facts` on the pod over the
// same ssh mpiexec will use (gj-mpirun is every pod's command, at the same path), rather than
// having the worker write its view at start. So the answer is the one an ssh session started now
// gets, with the environment (CUDA_VISIBLE_DEVICES) sshd gives the ranks, read just before they
// start (a GPU that fell off the bus after the pod started counts); the same session tells the
// pod's address for the network check, and a worker stays a plain sshd with nothing to keep.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "env_map.h"
#include "nccl_transport.h"
#include "plan.h"
#include "settings.h"

namespace gj {

struct PreflightPods {
  std::vector<std::string> ssh_prefix;     // ssh and its options; the host and command follow
  std::string self;                         // this gj-mpirun's path, the same on every pod
  std::optional<std::size_t> local_index;   // the host of the plan that is this pod (run without ssh)
};

// GPUs, then the network. Throws AgentError (kPreflightFailed) naming the pod when a pod sees
// fewer GPUs than its limit or a GPU reports ECC errors, and (strict) when a pod or link is slow.
// Returns each pod's RDMA facts (empty when nothing was asked), for the NCCL transport report.
std::vector<PodRdma> run_preflight(const LaunchPlan& plan, const AgentSettings& settings, const PreflightPods& pods);

// The master's NCCL transport line and warnings from the ranks' summaries (pod, the line a rank
// wrapper read with nccl_summary_of_file, sys/nccl_log.h); nothing when no rank sent one.
void log_nccl_transport(const std::vector<std::pair<std::string, std::string>>& rank_summaries,
                        const std::vector<PodRdma>& pods);

// The hidden modes (main.cpp dispatches them before any role): each prints its lines to stdout.
int run_preflight_facts(const EnvMap& env);
int run_preflight_nvml(const EnvMap& env);
int run_preflight_net(const std::vector<std::string>& args);
// `--gpu-use PID`: "gpu mem=B util=R devices=N" (the rank wrapper's GPU sample, rank_guard.h),
// or "gpu none reason=..." where NVML cannot answer.
int run_gpu_use(const EnvMap& env, const std::vector<std::string>& args);

}  // namespace gj
