// What this process may use of the node's CPUs: the size of its affinity mask (the pod's
// cpuset) and its cgroup's CPU quota. The decisions made from them are the planning core's (core/cpu_binding.h).
#pragma once

#include <string>
#include <vector>

#include "cgroup_cpu.h"

namespace gj {

struct CpuFactsRead {
  CpuFacts facts;
  std::vector<std::string> notes;  // facts that could not be read, and why (for the debug log)
};

// sched_getaffinity() for the cpuset; /proc/self/cgroup then /sys/fs/cgroup/<path>/cpu.max
// (v2) or /sys/fs/cgroup/cpu{,cpuacct}/<path>/cpu.cfs_{quota,period}_us (v1). A container
// usually sees its own cgroup as "/" (cgroup namespace), so the root's files are read too.
// Never throws: a fact that cannot be read is left unknown and noted.
CpuFactsRead read_cpu_facts();

}  // namespace gj
