#include "text.h"
#include "mpijob.h"

#include <climits>

#include "agent_error.h"
#include "exit_codes.h"
#include "hosts.h"
#include "quote.h"
#include "value_parsers.h"

namespace gj {
namespace {

[[noreturn]] void bad_line(const std::string& origin, std::size_t line, const std::string& text, const std::string& why) {
  throw AgentError{exit_code::kBadEnvironment, origin + " line " + std::to_string(line) + " " + quoted_value(text) + ": " +
                                                   why + "; expected `host slots=N` (Open MPI) or `host:N` (MPICH, Intel MPI)"};
}

std::int64_t line_slots(const std::string& origin, std::size_t line, const std::string& text, const std::string& v) {
  std::int64_t n = 0;
  try {
    n = parse_count("slots", v);
  } catch (const AgentError&) {
    bad_line(origin, line, text, "slots " + quoted_value(v) + " is not a whole number");
  }
  if (n < 1 || n > INT_MAX) bad_line(origin, line, text, "slots must be between 1 and " + std::to_string(INT_MAX));
  return n;
}

}  // namespace

MpiJobEnv mpijob_env(const EnvMap& env) {
  MpiJobEnv out{kMpiJobHostfile, "", std::nullopt};
  const std::pair<const char*, MpiFlavour> vars[] = {{"OMPI_MCA_orte_default_hostfile", MpiFlavour::OpenMpi4},
                                                     {"HYDRA_HOST_FILE", MpiFlavour::Mpich},
                                                     {"I_MPI_HYDRA_HOST_FILE", MpiFlavour::Intel}};
  for (const auto& [name, flavour] : vars) {
    if (const auto v = read_variable(env, name); v && !v->empty()) {
      out.hostfile = *v;
      out.hostfile_variable = name;
      out.flavour = flavour;
      break;
    }
  }
  return out;
}

std::vector<HostSlots> parse_mpijob_hostfile(const std::string& origin, const std::string& text) {
  std::vector<std::string> names;
  std::vector<std::size_t> where;
  std::vector<std::int64_t> slots;
  std::size_t line_no = 0;
  for (std::size_t start = 0; start < text.size();) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    ++line_no;
    std::string line = text.substr(start, end - start);
    start = end + 1;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    line = trim(line);
    if (line.empty()) continue;
    const auto w = split_fields(line, " \t");
    std::string host = w[0];
    std::int64_t n = 1;
    if (const auto colon = host.find(':'); colon != std::string::npos) {
      if (w.size() > 1) bad_line(origin, line_no, line, "`host:N` takes no further words");
      n = line_slots(origin, line_no, line, host.substr(colon + 1));
      host.erase(colon);
    } else {
      for (std::size_t i = 1; i < w.size(); ++i) {
        const auto eq = w[i].find('=');
        if (eq == std::string::npos) bad_line(origin, line_no, line, quoted_value(w[i]) + " is not key=value");
        const std::string key = w[i].substr(0, eq);
        if (key == "slots") n = line_slots(origin, line_no, line, w[i].substr(eq + 1));
        else if (key != "max_slots" && key != "max-slots")
          bad_line(origin, line_no, line, "unknown key " + quoted_value(key));
      }
    }
    names.push_back(host);
    where.push_back(line_no);
    slots.push_back(n);
  }
  const HostList valid = validate_hosts(origin, std::move(names), where, "line");
  std::vector<HostSlots> out;
  out.reserve(valid.hosts.size());
  for (std::size_t i = 0; i < valid.hosts.size(); ++i) out.push_back({valid.hosts[i], slots[i]});
  return out;
}

std::optional<std::int64_t> take_np(std::vector<std::string>& mpi_args) {
  for (std::size_t i = 0; i < mpi_args.size(); ++i) {
    const std::string& a = mpi_args[i];
    std::string value;
    std::size_t words_used = 0;
    if (a == "-np" || a == "-n" || a == "--np" || a == "--n") {
      if (i + 1 >= mpi_args.size())
        throw AgentError{exit_code::kUsage, quoted_value(a) + " lacks its process count; give " + a + " N"};
      value = mpi_args[i + 1];
      words_used = 2;
    } else if (a.rfind("-np=", 0) == 0 || a.rfind("--np=", 0) == 0) {
      value = a.substr(a.find('=') + 1);
      words_used = 1;
    } else {
      continue;
    }
    std::int64_t n = 0;
    try {
      n = parse_count("-np", value);
    } catch (const AgentError& e) {
      throw AgentError{exit_code::kUsage, e.message};
    }
    mpi_args.erase(mpi_args.begin() + static_cast<std::ptrdiff_t>(i),
                   mpi_args.begin() + static_cast<std::ptrdiff_t>(i + words_used));
    return n;
  }
  return std::nullopt;
}

bool is_this_pod(const std::string& host, const std::string& pod_name) {
  if (host == "localhost") return true;
  if (pod_name.empty()) return false;
  return host == pod_name || host.rfind(pod_name + ".", 0) == 0;
}

std::string launcher_host_name(const std::string& pod_name, const std::vector<HostSlots>& hosts) {
  for (const auto& h : hosts) {
    if (is_this_pod(h.host, pod_name)) continue;
    const auto dot = h.host.find('.');
    if (dot != std::string::npos) return pod_name + h.host.substr(dot);
  }
  return pod_name;
}

std::string rendezvous_host(const std::string& first_host, const std::string& pod_name,
                            const std::string& launcher_host) {
  if (is_this_pod(first_host, pod_name) && first_host.find('.') == std::string::npos && !launcher_host.empty())
    return launcher_host;
  return first_host;
}

LaunchPlan plan_mpijob(const JobSpec& spec, const std::string& origin, const std::vector<HostSlots>& hosts,
                       const Invocation& inv, const EnvMap& env) {
  LaunchPlan plan;
  plan.layout = Layout::Hostfile;
  plan.hosts = hosts;
  if (plan.hosts.empty())
    throw AgentError{exit_code::kBadPlan, origin + " lists no hosts; the MPIJob needs at least one worker replica"};
  std::int64_t sum = 0;
  for (const auto& h : plan.hosts) {
    if (__builtin_add_overflow(sum, h.slots, &sum) || sum > INT_MAX)
      throw AgentError{exit_code::kBadPlan, origin + ": the slots add up to more than " + std::to_string(INT_MAX)};
  }
  plan.mpi_args = inv.mpi_args;
  const auto np = take_np(plan.mpi_args);
  if (np && (*np < 1 || *np > sum))
    throw AgentError{exit_code::kBadPlan, "-np " + std::to_string(*np) + " but " + origin + " has " + std::to_string(sum) +
                                              " slots; give -np between 1 and " + std::to_string(sum) + " or add workers"};
  plan.np = np ? *np : sum;
  plan.notes.push_back("platform: Kubeflow MPIJob (K_MPI_JOB_ROLE=launcher)");
  plan.notes.push_back("hosts and slots: " + origin);
  plan.notes.push_back(np ? "np: your -np " + std::to_string(*np) : "np: the sum of the hostfile's slots");
  for (const auto& h : plan.hosts)
    if (!is_this_pod(h.host, spec.pod_name)) plan.wait_for.push_back(h.host);
  plan.command = rank_command(inv, spec.settings.python);
  ExportSelection sel = select_exports(env, spec.settings.exports, spec.settings.default_exports);
  plan.exports = std::move(sel.vars);
  plan.warnings.insert(plan.warnings.end(), sel.warnings.begin(), sel.warnings.end());
  return plan;
}

}  // namespace gj
