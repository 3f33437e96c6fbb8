#include "dry_run.h"

#include <algorithm>
#include <cstdio>

#include "env_forwarding.h"
#include "quote.h"

namespace gj {
namespace {

bool safe_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string("_@%+=:,./-").find(c) != std::string::npos;
}

// "NAME=VALUE" with a secret-looking NAME -> "NAME=<redacted>"; other words unchanged.
std::string redact_assignment(const std::string& word) {
  const auto eq = word.find('=');
  if (eq == std::string::npos || eq == 0) return word;
  const std::string name = word.substr(0, eq);
  return is_secret_name(name) ? display_assignment(name, word.substr(eq + 1)) : word;
}

std::string json_array(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i != 0) out += ',';
    out += json_string(items[i]);
  }
  return out + "]";
}

std::string env_prefix(const MpiexecCommand& cmd) {
  std::string out;
  for (const auto& [name, value] : cmd.env) out += shell_quote(display_assignment(name, value)) + " ";
  return out;
}

}  // namespace

std::string shell_quote(const std::string& word) {
  if (!word.empty()) {
    bool safe = true;
    for (char c : word) safe = safe && safe_char(c);
    if (safe) return word;
  }
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  out.reserve(argv.size() * 16);
  for (const auto& w : argv) {
    if (!out.empty()) out += ' ';
    out += shell_quote(w);
  }
  return out;
}

// Length of the valid UTF-8 sequence starting at s[i] (1-4), or 0 when it is not one.
static std::size_t utf8_sequence(const std::string& s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  std::size_t n = 0;
  unsigned min = 0;
  if (c >= 0xc2 && c <= 0xdf) n = 2, min = 0x80;
  else if (c >= 0xe0 && c <= 0xef) n = 3, min = 0x800;
  else if (c >= 0xf0 && c <= 0xf4) n = 4, min = 0x10000;
  else return 0;
  if (i + n > s.size()) return 0;
  unsigned cp = c & (0xff >> (n + 1));
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  out.reserve(s.size() + 2);
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const auto u = static_cast<unsigned char>(c);
    if (const char* e = short_escape(c)) {
      out += e;
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(u));
      out += buf;
    } else if (u < 0x80) {
      out += c;
    } else if (const std::size_t n = utf8_sequence(s, i)) {
      out.append(s, i, n);
      i += n - 1;
    } else {
      // Not UTF-8 (a path in another encoding): JSON must be, so the byte becomes U+00XX.
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(u));
      out += buf;
    }
  }
  return out + "\"";
}

std::vector<std::string> redacted_argv(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  for (std::size_t i = 0; i < argv.size(); ++i) {
    // hydra: -genv NAME VALUE
    if (argv[i] == "-genv" && i + 2 < argv.size()) {
      out.push_back(argv[i]);
      out.push_back(argv[i + 1]);
      out.push_back(loggable_value(argv[i + 1], argv[i + 2]));
      i += 2;
      continue;
    }
    out.push_back(redact_assignment(argv[i]));
  }
  return out;
}

static const char* rank_source(MpiFlavour f) {
  return f == MpiFlavour::OpenMpi4 || f == MpiFlavour::OpenMpi5 ? "OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}"
                                                               : "PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS";
}

static std::string rank_env_text(const MasterDryRun& d) {
  if (!d.plan.rank_env) return "# rank env: off (--no-rank-env/GJ_RANK_ENV=0)\n";
  const RankEnvSpec& r = *d.plan.rank_env;
  return std::string("# rank env: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE from ") + rank_source(d.flavour) +
         "; GROUP_RANK = the rank's host index; variables you set yourself win\n" +
         "# rank env: MASTER_ADDR=" + r.master_addr + " (" + d.plan.rank_env_origin.addr + ")\n" +
         "# rank env: MASTER_PORT=" + std::to_string(r.master_port) + " (" + d.plan.rank_env_origin.port + ")\n";
}

std::string threads_summary(const LaunchPlan& plan) {
  if (plan.user_threads)
    return "OMP_NUM_THREADS=" + loggable_value("OMP_NUM_THREADS", *plan.user_threads) +
           " (yours, set on the master); a rank keeps the OMP_NUM_THREADS its environment has";
  struct Group {
    std::int64_t cpus, slots;
    std::string first_host;
    std::size_t hosts;
  };
  std::vector<Group> groups;
  for (std::size_t i = 0; i < plan.hosts.size(); ++i) {
    const std::int64_t cpus = i < plan.pod_cpus.size() ? plan.pod_cpus[i] : 0;
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const Group& x) { return x.cpus == cpus && x.slots == plan.hosts[i].slots; });
    if (g == groups.end()) groups.push_back({cpus, plan.hosts[i].slots, plan.hosts[i].host, 1});
    else ++g->hosts;
  }
  std::string out;
  for (const auto& g : groups) {
    if (!out.empty()) out += ", ";
    const std::string where = g.hosts == 1 ? "on " + g.first_host
                                           : "on each of " + std::to_string(g.hosts) + " hosts like " + g.first_host;
    const std::string ranks = std::to_string(g.slots) + " rank(s)";
    if (g.cpus > 0)
      out += "OMP_NUM_THREADS=" + std::to_string(threads_per_rank(g.cpus, g.slots)) + " " + where + " (" +
             std::to_string(g.cpus) + " CPU(s) / " + ranks + ")";
    else
      out += "OMP_NUM_THREADS from the pod's cgroup quota / its ranks " + where + " (its CPU limit is not known here)";
  }
  if (plan.rank_env) out += "; a rank lowers it where its own pod's cgroup quota is smaller";
  return out;
}

std::string master_dry_run_text(const MasterDryRun& d) {
  std::string out;
  out += "MPI_HOSTS=" + hosts_argument(d.plan.hosts) + "\n";
  out += "MPI_NP=" + std::to_string(d.plan.np) + "\n";
  out += "# layout: " + std::string(to_string(d.plan.layout)) + "\n";
  out += "# mpi: " + std::string(to_string(d.flavour)) + " (" + d.flavour_source + ")\n";
  if (d.command.hostfile) {
    out += "# hosts: hostfile " + d.command.hostfile->path + " (" + std::to_string(d.plan.hosts.size()) +
           " hosts), written before mpiexec starts\n";
  } else {
    out += "# hosts: on the command line\n";
  }
  if (d.keys_at_run_time) out += "# ssh: -i <copied key> is added for each client key found at run time\n";
  for (const auto& n : d.plan.notes) out += "# " + n + "\n";
  out += rank_env_text(d);
  out += "# cpu binding: " + d.plan.binding.reason + "\n";
  out += "# threads: " + threads_summary(d.plan) + "\n";
  for (const auto& p : d.preflight) out += "# " + p + "\n";
  for (const auto& w : d.plan.warnings) out += "# warning: " + w + "\n";
  out += env_prefix(d.command) + shell_join(redacted_argv(d.command.argv)) + "\n";
  return out;
}

std::string master_dry_run_json(const MasterDryRun& d) {
  std::string out = "{\"role\":\"master\"";
  out += ",\"layout\":" + json_string(to_string(d.plan.layout));
  out += ",\"mpi\":" + json_string(to_string(d.flavour));
  out += ",\"hosts\":[";
  for (std::size_t i = 0; i < d.plan.hosts.size(); ++i) {
    if (i != 0) out += ',';
    const std::int64_t threads = d.plan.user_threads ? 0 : planned_threads(d.plan, i);
    out += "{\"host\":" + json_string(d.plan.hosts[i].host) + ",\"slots\":" + std::to_string(d.plan.hosts[i].slots) +
           ",\"omp_num_threads\":" + (threads > 0 ? std::to_string(threads) : "null") + "}";
  }
  out += "],\"np\":" + std::to_string(d.plan.np);
  out += ",\"argv\":" + json_array(redacted_argv(d.command.argv));
  out += ",\"env\":{";
  for (std::size_t i = 0; i < d.command.env.size(); ++i) {
    const auto& [name, value] = d.command.env[i];
    if (i != 0) out += ',';
    out += json_string(name) + ":" + json_string(loggable_value(name, value));
  }
  out += "},\"hostfile\":";
  out += d.command.hostfile ? json_string(d.command.hostfile->path) : "null";
  out += ",\"wait_for\":" + json_array(d.plan.wait_for);
  std::vector<std::string> exported;
  for (const auto& v : d.plan.exports) exported.push_back(v.name);
  out += ",\"exports\":" + json_array(exported);
  out += ",\"notes\":" + json_array(d.plan.notes);
  out += ",\"preflight\":" + json_array(d.preflight);
  out += ",\"rank_env\":";
  if (d.plan.rank_env) {
    out += "{\"MASTER_ADDR\":" + json_string(d.plan.rank_env->master_addr) +
           ",\"MASTER_PORT\":" + std::to_string(d.plan.rank_env->master_port) +
           ",\"from\":" + json_string(rank_source(d.flavour)) + "}";
  } else {
    out += "null";
  }
  out += ",\"binding\":{\"mode\":" + json_string(to_string(d.plan.binding.mode)) +
         ",\"reason\":" + json_string(d.plan.binding.reason) + "}";
  out += ",\"threads\":" + json_string(threads_summary(d.plan));
  out += ",\"warnings\":" + json_array(d.plan.warnings);
  return out + "}\n";
}

std::string worker_dry_run_text(const SshdSetup& setup) {
  std::string out = "# worker: prepares " + setup.state_dir + " (host keys, sshd_config with " +
                    std::to_string(setup.session_env.size()) + " session variables), then execs:\n";
  return out + shell_join(worker_sshd_argv(setup)) + "\n";
}

std::string worker_dry_run_json(const SshdSetup& setup) {
  std::vector<std::string> names;
  for (const auto& kv : setup.session_env) names.push_back(kv.first);
  return "{\"role\":\"worker\",\"argv\":" + json_array(worker_sshd_argv(setup)) +
         ",\"port\":" + std::to_string(setup.port) + ",\"session_env\":" + json_array(names) + "}\n";
}

}  // namespace gj
