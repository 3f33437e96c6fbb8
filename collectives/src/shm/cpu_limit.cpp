#include "shm/cpu_limit.h"

#include <fstream>
#include <sstream>
#include <vector>

namespace gj::shm {
namespace {

bool read_file(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  *out = text.str();
  return true;
}

bool read_number(const std::string& path, long long* out) {
  std::string text;
  if (!read_file(path, &text)) return false;
  std::istringstream in(text);
  return static_cast<bool>(in >> *out);
}

// "/a/b" -> {"/a/b", "/a", ""}: the cgroup and each ancestor, as suffixes of a mount point.
std::vector<std::string> self_and_ancestors(std::string path) {
  std::vector<std::string> out;
  while (!path.empty() && path.back() == '/') path.pop_back();
  for (;;) {
    out.push_back(path);
    const auto slash = path.rfind('/');
    if (path.empty() || slash == std::string::npos) break;
    path.erase(slash);
  }
  return out;
}

// Keeps the smaller of two limits, 0 meaning none.
int tighter(int a, int b) { return a == 0 ? b : b == 0 ? a : (a < b ? a : b); }

}  // namespace

int cpus_from_quota(long long quota, long long period) {
  if (quota <= 0 || period <= 0) return 0;
  const long long cpus = (quota + period - 1) / period;
  return cpus > 1'000'000 ? 1'000'000 : static_cast<int>(cpus);
}

int parse_cpu_max(const std::string& text) {
  std::istringstream in(text);
  std::string quota;
  long long period = 0;
  if (!(in >> quota >> period) || quota == "max") return 0;
  try {
    std::size_t used = 0;
    const long long q = std::stoll(quota, &used);
    return used == quota.size() ? cpus_from_quota(q, period) : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

int cgroup_cpu_limit(const std::string& root, const std::string& self_cgroup) {
  std::string lines;
  if (!read_file(self_cgroup, &lines)) return 0;
  int limit = 0;
  std::istringstream in(lines);
  for (std::string line; std::getline(in, line);) {
    // "<id>:<controllers>:<path>": v2 has id 0 and no controllers; v1 lists them, e.g. "cpu,cpuacct".
    const auto first = line.find(':');
    const auto second = line.find(':', first == std::string::npos ? first : first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (controllers.empty()) {
      for (const std::string& dir : self_and_ancestors(path)) {
        std::string text;
        if (read_file(root + dir + "/cpu.max", &text)) limit = tighter(limit, parse_cpu_max(text));
      }
      continue;
    }
    std::istringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');) {
      if (name != "cpu") continue;
      for (const std::string& dir : self_and_ancestors(path)) {
        const std::string base = root + "/" + controllers + dir + "/cpu.cfs_";
        long long quota = 0, period = 0;
        if (read_number(base + "quota_us", &quota) && read_number(base + "period_us", &period)) {
          limit = tighter(limit, cpus_from_quota(quota, period));
        }
      }
    }
  }
  return limit;
}

}  // namespace gj::shm
