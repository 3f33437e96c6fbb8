#include "cpu_facts.h"

#include <sched.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>

#include "cgroup_cpu.h"

namespace gj {
namespace {

// Small kernel files only: a cgroup file is a line; /proc/self/cgroup a few.
std::optional<std::string> read_small_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string text;
  char buf[4096];
  in.read(buf, sizeof buf);
  text.assign(buf, static_cast<std::size_t>(in.gcount()));
  return text;
}

std::optional<std::int64_t> affinity_cpus(std::vector<std::string>& notes) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) {
    notes.push_back(std::string("sched_getaffinity failed: ") + std::strerror(errno));
    return std::nullopt;
  }
  return CPU_COUNT(&set);
}

std::optional<double> quota_of(const CpuQuota& q, const std::string& where, std::vector<std::string>& notes) {
  if (!q.problem.empty()) notes.push_back(where + ": " + q.problem);
  if (!q.limited) return std::nullopt;
  return q.cpus;
}

std::optional<double> cgroup_quota(std::vector<std::string>& notes) {
  const auto self = read_small_file("/proc/self/cgroup");
  const auto cgroup = self ? cpu_cgroup_path(*self) : std::nullopt;
  if (!cgroup) {
    notes.push_back("no cpu cgroup in /proc/self/cgroup");
    return std::nullopt;
  }
  if (cgroup->v2) {
    for (const std::string& dir : {"/sys/fs/cgroup" + cgroup->path, std::string("/sys/fs/cgroup")}) {
      if (const auto text = read_small_file(dir + "/cpu.max")) return quota_of(parse_cpu_max(*text), dir + "/cpu.max", notes);
    }
    notes.push_back("no cpu.max for cgroup " + cgroup->path + " (the cpu controller is not enabled there)");
    return std::nullopt;
  }
  for (const char* root : {"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"}) {
    for (const std::string& dir : {std::string(root) + cgroup->path, std::string(root)}) {
      const auto quota = read_small_file(dir + "/cpu.cfs_quota_us");
      const auto period = read_small_file(dir + "/cpu.cfs_period_us");
      if (quota && period) return quota_of(parse_cfs_quota(*quota, *period), dir, notes);
    }
  }
  notes.push_back("no cpu.cfs_quota_us for cgroup " + cgroup->path);
  return std::nullopt;
}

}  // namespace

CpuFactsRead read_cpu_facts() {
  CpuFactsRead out;
  out.facts.cpuset_cpus = affinity_cpus(out.notes);
  out.facts.quota_cpus = cgroup_quota(out.notes);
  return out;
}

}  // namespace gj
