// Reading this pod's GPUs and RDMA devices for the pre-flight check (pod_facts.h). NVML is the
// driver's own library, opened at run time (no build dependency, no GPU needed to build); where
// the image has no NVML, the driver's proc tree. `root` ("/" in a pod) prefixes every path read
// here, so that tests give a fake tree (tests/multihost/s18_preflight.sh), as GJ_NVML_LIBRARY
// gives a fake NVML.
//
// gj-mpirun is a static binary: dlopen in it loads the image's libc next to the one linked in,
// which works when both are the same glibc and may crash where they differ. So nvml_devices runs
// only in a child of its own (`gj-mpirun --preflight-nvml`), whose crash leaves the proc tree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pod_facts.h"

namespace gj {

// Every device NVML enumerates (count, then name, UUID, PCI id and volatile uncorrected ECC errors
// of each). nullopt when the library cannot be opened or initialised (no driver); a device NVML
// counts but cannot open (lost, fallen off the bus) is left out with a note naming its index and
// NVML's error.
std::optional<std::vector<GpuDevice>> nvml_devices(const std::string& library, std::vector<std::string>& notes);

// One process's use of the GPUs (the rank's program, for the metrics endpoint: job_view.h):
// the device memory NVML lists for its pid, summed over devices, and the mean utilization of
// the devices it is on (nvmlDeviceGetUtilizationRates' gpu %, over NVML's last sample period, /100).
struct GpuUse {
  std::int64_t memory_bytes = 0;
  double utilization = 0;
  int devices = 0;  // devices that list the pid
};

// nullopt (with a note) when NVML cannot be opened or lacks the calls. A pid no device lists is
// devices == 0: NVML reports host pids, so in a container without the host's PID namespace no
// pid matches (docs/gpu.md). In a child of its own, as nvml_devices (`gj-mpirun --gpu-use PID`).
std::optional<GpuUse> nvml_process_use(const std::string& library, int pid, std::string& note);

// The devices of <root>/proc/driver/nvidia/gpus/*/information; nullopt without that directory.
std::optional<std::vector<GpuDevice>> proc_devices(const std::string& root, std::vector<std::string>& notes);

// The names under <root>/sys/class/infiniband (RDMA devices: InfiniBand, RoCE), sorted; empty without.
std::vector<std::string> rdma_devices(const std::string& root);

}  // namespace gj
