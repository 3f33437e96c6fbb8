#include "text.h"
#include "cgroup_cpu.h"

#include <sstream>

#include "quote.h"

namespace gj {
namespace {

// A whole positive number of microseconds as the kernel writes it (at most 18 digits).
bool read_micros(const std::string& word, long long& out) {
  if (word.empty() || word.size() > 18 || word.find_first_not_of("0123456789") != std::string::npos) return false;
  out = std::stoll(word);
  return out > 0;
}

// The quota word against the file's "no quota" word, in CPUs of period_us.
CpuQuota quota_in_cpus(const std::string& quota, const char* unlimited, long long period_us, const std::string& file) {
  if (quota == unlimited) return {};
  long long quota_us = 0;
  if (!read_micros(quota, quota_us))
    return {false, 0, file + " has a quota that is neither " + unlimited + " nor a number of microseconds"};
  return {true, static_cast<double>(quota_us) / static_cast<double>(period_us), ""};
}

}  // namespace

CpuQuota parse_cpu_max(const std::string& text) {
  std::istringstream in(text);
  std::string quota, period, extra;
  long long period_us = 0;
  if (!(in >> quota >> period) || (in >> extra) || !read_micros(period, period_us))
    return {false, 0, "cpu.max " + quoted_value(text) + " is not \"<quota> <period>\""};
  return quota_in_cpus(quota, "max", period_us, "cpu.max " + quoted_value(text));
}

CpuQuota parse_cfs_quota(const std::string& quota_text, const std::string& period_text) {
  long long period_us = 0;
  if (!read_micros(trim(period_text), period_us))
    return {false, 0, "cpu.cfs_period_us " + quoted_value(period_text) + " is not a positive number of microseconds"};
  return quota_in_cpus(trim(quota_text), "-1", period_us, "cpu.cfs_quota_us " + quoted_value(quota_text));
}

std::optional<CgroupPath> cpu_cgroup_path(const std::string& proc_cgroup_text) {
  std::istringstream in(proc_cgroup_text);
  std::optional<CgroupPath> v1;
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? std::string::npos : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string id = line.substr(0, first);
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (id == "0" && controllers.empty()) return CgroupPath{true, path};
    std::istringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');)
      if (name == "cpu" && !v1) v1 = CgroupPath{false, path};
  }
  return v1;
}

}  // namespace gj
