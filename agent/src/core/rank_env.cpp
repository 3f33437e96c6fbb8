#include "text.h"
#include "rank_env.h"

#include <algorithm>

#include "agent_error.h"
#include "exit_codes.h"
#include "host_name.h"
#include "ip_address.h"
#include "quote.h"
#include "value_parsers.h"

namespace gj {
namespace {

[[noreturn]] void bad_spec(const std::string& text, const std::string& why) {
  throw AgentError{exit_code::kUsage, std::string(kRankExecFlag) + " " + quoted_value(text) + ": " + why +
                                          " (gj-mpirun writes this argument itself; do not pass it by hand)"};
}

// Far more hosts than any job has; a spec beyond it is not one gj-mpirun wrote.
constexpr std::int64_t kMaxRankExecHosts = 1 << 20;

bool is_decimal(const std::string& s) {
  return !s.empty() && s.size() <= 9 && s.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

const std::vector<const char*>& rank_env_names() {
  static const std::vector<const char*> names = {"RANK",       "WORLD_SIZE",  "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                                 "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS"};
  return names;
}

std::string encode_rank_env_spec(const RankEnvSpec& spec) {
  std::string out = spec.master_addr + "," + std::to_string(spec.master_port);
  const auto cpus = [&](std::size_t i) { return i < spec.cpus.size() ? spec.cpus[i] : 0; };
  for (std::size_t i = 0; i < spec.slots.size();) {
    std::size_t j = i;
    while (j < spec.slots.size() && spec.slots[j] == spec.slots[i] && cpus(j) == cpus(i)) ++j;
    out += "," + std::to_string(spec.slots[i]);
    if (cpus(i) > 0) out += "/" + std::to_string(cpus(i));
    out += "*" + std::to_string(j - i);
    i = j;
  }
  if (!spec.nccl_log_dir.empty()) out += ",nccl=" + spec.nccl_log_dir;
  return out;
}

RankEnvSpec decode_rank_env_spec(const std::string& full) {
  const auto nccl = full.find(",nccl=");
  const std::string text = full.substr(0, nccl);
  const auto parts = split(text, ',');
  if (parts.size() < 3) bad_spec(text, "expected <addr>,<port>,<slots>*<hosts>...");
  RankEnvSpec spec;
  if (nccl != std::string::npos) spec.nccl_log_dir = full.substr(nccl + 6);
  spec.master_addr = parts[0];
  if (spec.master_addr.empty()) bad_spec(text, "empty master address");
  try {
    spec.master_port = parse_port("master port", parts[1]);
    std::int64_t total_hosts = 0;
    for (std::size_t i = 2; i < parts.size(); ++i) {
      const auto star = parts[i].find('*');
      if (star == std::string::npos) bad_spec(text, "slot run " + quoted_value(parts[i]) + " lacks '*'");
      const std::string head = parts[i].substr(0, star);
      const auto slash = head.find('/');
      const std::int64_t slots = parse_count("slots", head.substr(0, slash));
      const std::int64_t cpus = slash == std::string::npos ? 0 : parse_count("cpus", head.substr(slash + 1));
      const std::int64_t hosts = parse_count("hosts", parts[i].substr(star + 1));
      total_hosts += std::min<std::int64_t>(hosts, kMaxRankExecHosts + 1);
      if (total_hosts > kMaxRankExecHosts)
        bad_spec(text, "more than " + std::to_string(kMaxRankExecHosts) + " hosts in all");
      spec.slots.insert(spec.slots.end(), static_cast<std::size_t>(hosts), slots);
      spec.cpus.insert(spec.cpus.end(), static_cast<std::size_t>(hosts), cpus);
    }
  } catch (const AgentError& e) {
    bad_spec(text, e.message);
  }
  return spec;
}

RankEnv rank_environment(const EnvMap& env, const RankEnvSpec& spec, const CpuFacts& this_pod) {
  RankEnv out;
  std::optional<std::string> rank, size, local_rank, local_size;
  if (env_value(env, "OMPI_COMM_WORLD_RANK")) {
    out.source = "OMPI_COMM_WORLD_*";
    rank = env_value(env, "OMPI_COMM_WORLD_RANK");
    size = env_value(env, "OMPI_COMM_WORLD_SIZE");
    local_rank = env_value(env, "OMPI_COMM_WORLD_LOCAL_RANK");
    local_size = env_value(env, "OMPI_COMM_WORLD_LOCAL_SIZE");
  } else if (env_value(env, "PMI_RANK")) {
    out.source = "PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS";
    rank = env_value(env, "PMI_RANK");
    size = env_value(env, "PMI_SIZE");
    local_rank = env_value(env, "MPI_LOCALRANKID");
    local_size = env_value(env, "MPI_LOCALNRANKS");
  } else {
    throw AgentError{exit_code::kBadEnvironment,
                     std::string(kRankExecFlag) +
                         ": neither OMPI_COMM_WORLD_RANK (Open MPI) nor PMI_RANK (MPICH, Intel MPI) is set; this mode "
                         "runs under mpiexec only"};
  }
  const std::int64_t r = parse_count("rank", rank.value_or(""));
  std::vector<std::pair<std::string, std::string>> want = {{"RANK", *rank}};
  if (size) want.emplace_back("WORLD_SIZE", *size);
  if (local_rank) want.emplace_back("LOCAL_RANK", *local_rank);
  if (local_size) want.emplace_back("LOCAL_WORLD_SIZE", *local_size);
  // The host holding rank r when ranks fill hosts slot by slot, in host order.
  std::int64_t first = 0;
  std::optional<std::size_t> host;
  for (std::size_t h = 0; h < spec.slots.size(); ++h) {
    if (r < first + spec.slots[h]) {
      if (local_rank && std::to_string(r - first) != *local_rank) break;  // not mapped by slot
      want.emplace_back("GROUP_RANK", std::to_string(h));
      host = h;
      break;
    }
    first += spec.slots[h];
  }
  const bool placed = host.has_value();
  if (!placed)
    out.warnings.push_back("GROUP_RANK not set: rank " + std::to_string(r) +
                           " is not where slot-by-slot mapping puts it (an --map-by of your own?)");
  want.emplace_back("MASTER_ADDR", spec.master_addr);
  want.emplace_back("MASTER_PORT", std::to_string(spec.master_port));
  // The pod's CPUs shared by its ranks: the master's figure for this host, lowered to the quota
  // this rank's own cgroup has (the master cannot see the other pods' cgroups).
  const std::int64_t host_cpus = host && *host < spec.cpus.size() ? spec.cpus[*host] : 0;
  if (const auto cpus = pod_cpu_allocation(host_cpus, this_pod.quota_cpus)) {
    // The flavour's local size, else the slots of the host (mapping by slot puts that many here).
    const std::int64_t ranks_here = local_size && is_decimal(*local_size) ? std::stoll(*local_size)
                                    : host                               ? spec.slots[*host]
                                                                         : 1;
    want.emplace_back("OMP_NUM_THREADS", std::to_string(threads_per_rank(*cpus, ranks_here)));
  }
  // NCCL's choice of network, into a file of gj's for the master's transport line (nccl_transport.h);
  // a user's own NCCL_DEBUG wins, with the rest of their NCCL debug settings.
  if (!spec.nccl_log_dir.empty() && !env_value(env, "NCCL_DEBUG")) {
    out.set.emplace_back("NCCL_DEBUG", "INFO");
    out.set.emplace_back("NCCL_DEBUG_SUBSYS", "INIT,NET");
    out.set.emplace_back("NCCL_DEBUG_FILE", nccl_debug_file(spec.nccl_log_dir, *rank));
  }
  std::vector<std::string> contradicting;
  for (auto& [name, value] : want) {
    const auto yours = env_value(env, name);  // empty means unset, as everywhere
    if (!yours) {
      out.set.emplace_back(std::move(name), std::move(value));
      continue;
    }
    out.kept.push_back(name);
    const bool mpi_says = name == "RANK" || name == "WORLD_SIZE" || name == "LOCAL_RANK" || name == "LOCAL_WORLD_SIZE";
    if (mpi_says && *yours != value) contradicting.push_back(quoted_setting(name, *yours) + " (MPI: " + value + ")");
  }
  if (!contradicting.empty()) {
    std::string list;
    for (const auto& c : contradicting) list += (list.empty() ? "" : ", ") + c;
    out.warnings.push_back("your " + list + " contradict" + (contradicting.size() == 1 ? "s" : "") +
                           " what MPI gives this rank and " + (contradicting.size() == 1 ? "is" : "are") +
                           " kept, so ranks may claim the same rank; unset " +
                           (contradicting.size() == 1 ? "it" : "them") + " in the job's environment");
  }
  return out;
}

std::string nccl_debug_file(const std::string& dir, const std::string& rank) {
  return dir + "/nccl-rank" + rank + ".log";
}

RankEnvSpec master_rank_env_spec(const std::vector<std::int64_t>& slots, const std::string& first_host,
                                 const EnvMap& env, int chosen_port, const std::string& port_how,
                                 RankEnvOrigin* origin) {
  RankEnvSpec spec;
  spec.slots = slots;
  RankEnvOrigin o{"the first rank's host", port_how};
  if (const auto addr = env_value(env, "MASTER_ADDR")) {
    if (!parse_ip(*addr) && !is_valid_host_name(*addr))
      throw AgentError{exit_code::kBadEnvironment,
                       quoted_setting("MASTER_ADDR", *addr) + " is neither an IP address nor a valid DNS host name (" +
                           dns_name_problem(*addr) + "); set it to the host of rank 0, or unset it to let gj-mpirun "
                           "use the first rank's host"};
    spec.master_addr = *addr;
    o.addr = "MASTER_ADDR set on the master";
  } else {
    spec.master_addr = first_host;
  }
  if (const auto port = env_value(env, "MASTER_PORT")) {
    try {
      spec.master_port = parse_port("MASTER_PORT", *port);
    } catch (const AgentError& e) {
      throw AgentError{exit_code::kBadEnvironment, e.message + " (torch.distributed's rendezvous port)"};
    }
    o.port = "MASTER_PORT set on the master";
  } else {
    spec.master_port = chosen_port;
  }
  if (origin != nullptr) *origin = o;
  return spec;
}

std::vector<std::string> rank_exec_command(const std::string& self, const RankEnvSpec& spec,
                                           const std::vector<std::string>& command) {
  std::vector<std::string> out = {self, kRankExecFlag, encode_rank_env_spec(spec), "--"};
  out.insert(out.end(), command.begin(), command.end());
  return out;
}

std::vector<std::string> with_rank_monitor(const std::vector<std::string>& command, const std::string& endpoint) {
  if (command.size() < 4 || command[1] != kRankExecFlag || command[3] != "--") return command;
  std::vector<std::string> out(command.begin(), command.begin() + 3);
  out.push_back(kRankMonitorFlag);
  out.push_back(endpoint);
  out.insert(out.end(), command.begin() + 3, command.end());
  return out;
}

RankExecArgs parse_rank_exec_args(const std::vector<std::string>& args) {
  const std::string usage = std::string("usage: gj-mpirun ") + kRankExecFlag + " <spec> [" + kRankMonitorFlag +
                            " <endpoint>] -- <command...> (gj-mpirun writes these arguments itself)";
  RankExecArgs out;
  std::size_t i = 1;
  if (args.size() >= 3 && args[1] == kRankMonitorFlag) {
    out.monitor = args[2];
    i = 3;
  }
  if (args.size() < i + 2 || args[i] != "--") throw AgentError{exit_code::kUsage, usage};
  out.spec = args[0];
  out.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
  return out;
}

}  // namespace gj
