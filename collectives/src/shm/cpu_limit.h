// The CPU quota of this process's cgroup, in whole CPUs. A Kubernetes CPU limit is such a
// quota: the pod's processes still see every CPU of the node in their affinity mask, so only
// the quota tells that 8 ranks in a pod limited to 4 CPUs outnumber their CPUs (the wait
// mode, wait.h, depends on it).
#pragma once

#include <string>

namespace gj::shm {

// ceil(quota / period), at least 1; 0 = no limit (quota or period <= 0). Pure.
int cpus_from_quota(long long quota, long long period);

// A cgroup v2 `cpu.max` file's text ("max 100000", "150000 100000"): the CPUs it grants, or 0
// for no limit or text it cannot read. Pure.
int parse_cpu_max(const std::string& text);

// The smallest quota over this process's cgroup and its ancestors, in CPUs; 0 = no limit found.
// Reads `self_cgroup` (the /proc/self/cgroup format) and, under `root`, cgroup v2's cpu.max or
// cgroup v1's cpu.cfs_quota_us and cpu.cfs_period_us. Paths are parameters for tests.
int cgroup_cpu_limit(const std::string& root = "/sys/fs/cgroup", const std::string& self_cgroup = "/proc/self/cgroup");

}  // namespace gj::shm
