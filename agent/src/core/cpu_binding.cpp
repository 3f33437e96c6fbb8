#include "text.h"
#include "cpu_binding.h"

#include <algorithm>
#include <cmath>

namespace gj {
namespace {

// An mpiexec option's name without its leading dashes and any "=value" (Open MPI takes both
// -bind-to and --bind-to, hydra -bind-to).
std::string option_name(const std::string& word) {
  if (word.size() < 2 || word[0] != '-') return "";
  const std::size_t start = word[1] == '-' ? 2 : 1;
  return word.substr(start, word.find('=') == std::string::npos ? std::string::npos : word.find('=') - start);
}

bool is_binding_option(const std::string& name) {
  static const char* const kNames[] = {"bind-to", "bind-to-core", "bind-to-socket", "bind-to-board", "cpu-bind",
                                       "cpu-set", "cpu-list",     "rankfile",       "rf",            "binding"};
  return std::find_if(std::begin(kNames), std::end(kNames), [&](const char* n) { return name == n; }) !=
         std::end(kNames);
}

bool is_binding_parameter(const std::string& word) {
  return word == "hwloc_base_binding_policy" || word == "hwloc_default_binding_policy" || starts_with(word, "I_MPI_PIN");
}

}  // namespace

std::optional<std::int64_t> pod_cpu_allocation(std::int64_t platform_limit, const std::optional<double>& quota_cpus) {
  std::optional<std::int64_t> cpus;
  if (platform_limit > 0) cpus = platform_limit;
  if (quota_cpus && *quota_cpus > 0) {
    const auto quota = static_cast<std::int64_t>(std::min(std::floor(*quota_cpus), 1e15));
    if (!cpus || quota < *cpus) cpus = quota;
  }
  return cpus;
}

std::int64_t threads_per_rank(std::int64_t allocation, std::int64_t ranks) {
  if (ranks <= 0) return std::max<std::int64_t>(allocation, 1);
  return std::max<std::int64_t>(allocation / ranks, 1);
}

const char* to_string(BindingMode m) {
  switch (m) {
    case BindingMode::None: return "none";
    case BindingMode::FlavourDefault: return "mpiexec's default";
    case BindingMode::User: return "yours";
  }
  return "?";
}

std::string user_binding(const std::vector<std::string>& mpi_args, const EnvMap& env) {
  for (std::size_t i = 0; i < mpi_args.size(); ++i) {
    const std::string& w = mpi_args[i];
    if (is_binding_option(option_name(w))) {
      const bool value_follows = w.find('=') == std::string::npos && i + 1 < mpi_args.size() &&
                                 option_name(w).compare(0, 8, "bind-to-") != 0;
      return value_follows ? w + " " + mpi_args[i + 1] : w;
    }
    const std::string param = w.substr(0, w.find('='));
    if (is_binding_parameter(param)) return w;
  }
  for (const char* name : {"OMPI_MCA_hwloc_base_binding_policy", "PRTE_MCA_hwloc_default_binding_policy", "HYDRA_BINDING"})
    if (env_value(env, name)) return name;
  for (const auto& [name, value] : env)
    if (starts_with(name, "I_MPI_PIN") && !value.empty()) return name;
  return "";
}

BindingChoice choose_binding(const std::vector<std::string>& mpi_args, const EnvMap& env, const CpuFacts& this_pod,
                             const std::optional<std::int64_t>& this_pod_allocation, bool ranks_elsewhere) {
  if (const std::string asked = user_binding(mpi_args, env); !asked.empty())
    return {BindingMode::User, "yours (" + asked + "); gj-mpirun adds no binding of its own"};
  const std::string off = "off, so that ranks of pods sharing a node are not pinned to the same cores";
  if (ranks_elsewhere)
    return {BindingMode::None, off + " (ranks run on other pods, whose cpusets this pod cannot see)"};
  if (!this_pod.cpuset_cpus || !this_pod_allocation)
    return {BindingMode::None, off + " (this pod's " + std::string(this_pod.cpuset_cpus ? "CPU allocation" : "cpuset") +
                                   " is not known)"};
  const std::string sizes = "cpuset of " + std::to_string(*this_pod.cpuset_cpus) + " CPU(s), allocation " +
                            std::to_string(*this_pod_allocation);
  if (*this_pod.cpuset_cpus != *this_pod_allocation)
    return {BindingMode::None, off + " (" + sizes + ": the pod shares its cores with other pods)"};
  return {BindingMode::FlavourDefault,
          "mpiexec's default, within this pod's own CPUs (" + sizes + ": the pod owns them exclusively)"};
}

}  // namespace gj
