#include "text.h"
#include "mpiexec_argv.h"

namespace gj {
namespace {

void append(std::vector<std::string>& argv, const std::vector<std::string>& more) {
  argv.insert(argv.end(), more.begin(), more.end());
}

// Slots per host when every host has the same count, else nullopt.
std::optional<std::int64_t> uniform_slots(const LaunchPlan& plan) {
  if (plan.hosts.empty()) return std::nullopt;
  for (const auto& h : plan.hosts)
    if (h.slots != plan.hosts.front().slots) return std::nullopt;
  return plan.hosts.front().slots;
}

// One line per host: "h slots=s" (Open MPI) or "h:s" (hydra).
std::string hostfile_content(const LaunchPlan& plan, bool openmpi) {
  std::string out;
  out.reserve(plan.hosts.size() * 40);
  for (const auto& h : plan.hosts) {
    out += h.host;
    out += openmpi ? " slots=" : ":";
    out += std::to_string(h.slots);
    out += '\n';
  }
  return out;
}

// Open MPI 4 (ORTE) and 5 (PRRTE) share the command line except for the names of the
// launcher's parameters (`--mca plm_rsh_*`/`orte_*` vs `--prtemca plm_ssh_*`/`prte_*`).
MpiexecCommand openmpi_command(const LaunchPlan& plan, const MpiexecRequest& req, bool v5) {
  MpiexecCommand cmd;
  auto& a = cmd.argv;
  a = {req.mpiexec, "--allow-run-as-root"};
  if (use_hostfile(plan, req.hostfile_mode)) {
    cmd.hostfile = Hostfile{req.hostfile_path, hostfile_content(plan, true)};
    append(a, {"--hostfile", req.hostfile_path});
  } else {
    append(a, {"--host", hosts_argument(plan.hosts)});
  }
  append(a, {"-np", std::to_string(plan.np), "--map-by", "slot"});
  const std::string mca = v5 ? "--prtemca" : "--mca";
  // No tree spawn: only the master needs working client keys; workers' mounted keys may have
  // modes ssh rejects. Keep FQDNs: short names do not resolve across the headless service and
  // pods sharing a short name would collide.
  append(a, {mca, v5 ? "plm_ssh_args" : "plm_rsh_args", join(ssh_client_args(req.ssh), " ")});
  append(a, {mca, v5 ? "plm_ssh_no_tree_spawn" : "plm_rsh_no_tree_spawn", "1"});
  append(a, {mca, v5 ? "prte_keep_fqdn_hostnames" : "orte_keep_fqdn_hostnames", "1"});
  if (plan.binding.mode == BindingMode::None) append(a, {"--bind-to", "none"});
  for (const auto& v : plan.exports) append(a, {"-x", v.value ? v.name + "=" + *v.value : v.name});
  append(a, plan.mpi_args);
  append(a, plan.command);
  return cmd;
}

// Hydra passes the launcher's whole environment to every rank unless told otherwise, which would
// overwrite each pod's own values (NCCL_IB_HCA, the pod name) with the master's. -genvlist (only
// these) or else -genvnone keeps what each rank's pod gives it (sshd's SetEnv), plus exactly the
// exports. (Hydra takes one of the two, not both.)
void hydra_exports(const LaunchPlan& plan, std::vector<std::string>& a) {
  std::vector<std::string> inherited;
  for (const auto& v : plan.exports)
    if (!v.value) inherited.push_back(v.name);
  if (!inherited.empty()) append(a, {"-genvlist", join(inherited, ",")});
  else a.push_back("-genvnone");
  for (const auto& v : plan.exports)
    if (v.value) append(a, {"-genv", v.name, *v.value});
}

}  // namespace

std::vector<std::string> ssh_client_args(const SshOptions& ssh) {
  std::vector<std::string> args = {"-o", "BatchMode=yes",
                                   "-o", "StrictHostKeyChecking=no",
                                   "-o", "UserKnownHostsFile=/dev/null",
                                   "-o", "LogLevel=ERROR",
                                   "-o", "ConnectTimeout=" + std::to_string(ssh.connect_timeout_s),
                                   "-p", std::to_string(ssh.port)};
  for (const auto& key : ssh.identity_files) append(args, {"-i", key});
  return args;
}

std::string exec_size_problem(const MpiexecCommand& cmd, std::size_t environment_bytes) {
  constexpr std::size_t kMaxArgStrlen = 128 * 1024;
  constexpr std::size_t kArgMax = 2 * 1024 * 1024;
  std::size_t total = environment_bytes;
  for (const auto& w : cmd.argv) {
    if (w.size() + 1 > kMaxArgStrlen)
      return "one mpiexec argument is " + std::to_string(w.size()) + " bytes, over the kernel's 128 KiB limit for one "
             "argument (E2BIG); use --hostfile-mode auto or always";
    total += w.size() + 1 + sizeof(char*);
  }
  for (const auto& [name, value] : cmd.env) total += name.size() + value.size() + 2 + sizeof(char*);
  if (total > kArgMax)
    return "mpiexec's arguments and environment are " + std::to_string(total) + " bytes, over 2 MiB (E2BIG); use "
           "--hostfile-mode auto or always, or forward fewer variables";
  return "";
}

bool use_hostfile(const LaunchPlan& plan, HostfileMode mode) {
  if (mode == HostfileMode::Always) return true;
  if (mode == HostfileMode::Never) return false;
  std::size_t bytes = 0;
  for (const auto& h : plan.hosts) bytes += h.host.size() + 1 + std::to_string(h.slots).size() + 1;
  return bytes > kHostArgLimit;
}

MpiexecCommand openmpi4_command(const LaunchPlan& plan, const MpiexecRequest& req) {
  return openmpi_command(plan, req, false);
}

MpiexecCommand openmpi5_command(const LaunchPlan& plan, const MpiexecRequest& req) {
  return openmpi_command(plan, req, true);
}

MpiexecCommand mpich_command(const LaunchPlan& plan, const MpiexecRequest& req) {
  MpiexecCommand cmd;
  auto& a = cmd.argv;
  a = {req.mpiexec};
  if (use_hostfile(plan, req.hostfile_mode)) {
    cmd.hostfile = Hostfile{req.hostfile_path, hostfile_content(plan, false)};
    append(a, {"-f", req.hostfile_path});
  } else {
    append(a, {"-hosts", hosts_argument(plan.hosts)});
  }
  append(a, {"-n", std::to_string(plan.np)});
  if (const auto ppn = uniform_slots(plan)) append(a, {"-ppn", std::to_string(*ppn)});
  append(a, {"-launcher", "ssh"});
  if (!req.launcher_host.empty()) append(a, {"-localhost", req.launcher_host});
  // MPICH's ssh launcher takes extra ssh arguments only from this variable.
  cmd.env.emplace_back("HYDRA_LAUNCHER_EXTRA_ARGS", join(ssh_client_args(req.ssh), " "));
  if (plan.binding.mode == BindingMode::None) append(a, {"-bind-to", "none"});
  hydra_exports(plan, a);
  append(a, plan.mpi_args);
  append(a, plan.command);
  return cmd;
}

MpiexecCommand intel_command(const LaunchPlan& plan, const MpiexecRequest& req) {
  MpiexecCommand cmd;
  auto& a = cmd.argv;
  a = {req.mpiexec};
  const auto ppn = uniform_slots(plan);
  // Intel's -hosts takes bare names; per-host counts need a machinefile ("h:s" lines).
  if (ppn && !use_hostfile(plan, req.hostfile_mode)) {
    std::vector<std::string> names;
    names.reserve(plan.hosts.size());
    for (const auto& h : plan.hosts) names.push_back(h.host);
    append(a, {"-hosts", join(names, ","), "-ppn", std::to_string(*ppn)});
  } else {
    cmd.hostfile = Hostfile{req.hostfile_path, hostfile_content(plan, false)};
    append(a, {"-machinefile", req.hostfile_path});
  }
  append(a, {"-n", std::to_string(plan.np), "-bootstrap", "ssh", "-bootstrap-exec-args",
             join(ssh_client_args(req.ssh), " ")});
  if (!req.launcher_host.empty()) append(a, {"-localhost", req.launcher_host});
  hydra_exports(plan, a);
  // Intel MPI pins every rank by default; its switch is a variable of the ranks' environment.
  if (plan.binding.mode == BindingMode::None) append(a, {"-genv", "I_MPI_PIN", "off"});
  append(a, plan.mpi_args);
  append(a, plan.command);
  return cmd;
}

MpiexecCommand build_mpiexec_command(const LaunchPlan& plan, const MpiexecRequest& req) {
  switch (req.flavour) {
    case MpiFlavour::OpenMpi4: return openmpi4_command(plan, req);
    case MpiFlavour::OpenMpi5: return openmpi5_command(plan, req);
    case MpiFlavour::Mpich: return mpich_command(plan, req);
    case MpiFlavour::Intel: return intel_command(plan, req);
  }
  return openmpi4_command(plan, req);
}

}  // namespace gj
