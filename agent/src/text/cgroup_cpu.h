// Pure: the CPU quota of a cgroup from the text of its files (cgroup v2 `cpu.max`, v1
// `cpu.cfs_quota_us` + `cpu.cfs_period_us`) and which cgroup a process is in (`/proc/self/cgroup`).
// Read by sys/cpu_facts.cpp; the decisions are in cpu_binding.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gj {

// What one pod may use, as this process sees it: the facts sys/cpu_facts.cpp reads, which the
// planning core's binding decisions (cpu_binding.h) take as input.
struct CpuFacts {
  std::optional<std::int64_t> cpuset_cpus;  // CPUs in the affinity mask (the cgroup's cpuset)
  std::optional<double> quota_cpus;         // CFS quota / period; nullopt when there is no quota
};

// A quota in CPUs, or why there is none: `limited` false with an empty `problem` means the file
// says "no quota" (v2 "max", v1 -1); a non-empty problem means the text is not what the kernel writes.
struct CpuQuota {
  bool limited = false;
  double cpus = 0;
  std::string problem;
};

// "<quota> <period>" or "max <period>" (cgroup v2 cpu.max).
CpuQuota parse_cpu_max(const std::string& text);
// cgroup v1: cpu.cfs_quota_us ("-1" or microseconds) and cpu.cfs_period_us.
CpuQuota parse_cfs_quota(const std::string& quota_text, const std::string& period_text);

// The cgroup path of a process from /proc/<pid>/cgroup: the v2 entry ("0::/path") when there
// is one, else the v1 entry whose controllers include "cpu" ("4:cpu,cpuacct:/path"); nullopt
// when neither is there.
struct CgroupPath {
  bool v2 = true;
  std::string path;
};
std::optional<CgroupPath> cpu_cgroup_path(const std::string& proc_cgroup_text);

}  // namespace gj
