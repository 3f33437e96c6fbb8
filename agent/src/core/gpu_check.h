// The GPU pre-flight check (docs/agent.md, "Pre-flight checks"): what each pod's processes can
// use, as the pod reported it (pod_facts.h), against the GPUs the platform gave it. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pod_facts.h"

namespace gj {

// One pod of the host list, as the master asked it.
struct PodGpuAnswer {
  std::string pod;          // the host list's name (<pod>.<job>)
  std::int64_t limit = 0;   // the GPUs the platform gave it (its slots in a GPU layout)
  std::string limit_name;   // the variable that says so (GJ_TRAINING_WORKER_GPU_LIMIT)
  std::optional<PodFacts> facts;
  std::string error;        // why there are no facts (ssh failed, probe cut short)
};

struct GpuCheck {
  std::vector<std::string> failures;  // each ends the job: a pod with fewer GPUs, ECC errors
  std::vector<std::string> warnings;  // a pod that could not be asked
  std::vector<std::string> debug;     // pods without a driver (nothing checked there)
  std::string summary;                // one info line when something was checked; "" otherwise
};

// Each pod with a GPU limit: it fails when its processes see fewer devices than the limit
// (CUDA_VISIBLE_DEVICES applied as CUDA applies it), naming the count, the devices it sees and
// what the probe noted, or when a device it uses reports uncorrected ECC errors. A pod without a
// driver (no NVML, no /proc/driver/nvidia) checks nothing: one debug line.
GpuCheck check_gpus(const std::vector<PodGpuAnswer>& pods);

}  // namespace gj
