// argv builder: LaunchPlan -> mpiexec argv for every MPI flavour and hostfile mode.
// Input: lines "K=VALUE" (C escapes decoded):
//   H=<MPI_HOST text>   workers (through the real parser, so only validated hosts get in)
//   N=<n>               replicate every host n times (r1-<host>, ...) to reach hostfile sizes
//   S=<slots>           slots of the next host (cycled; default 1)
//   P=<script>  A=<script arg>  M=<user mpiexec arg>  I=<identity file>
//   E=<NAME=VALUE> master env   X=<export request>   D=<0|1> default exports
// Invariants beyond "no crash", for each flavour and hostfile mode:
//  - the argv parses as: mpiexec, builder options (each a known flag followed by its fixed
//    number of values), the user's mpiexec args verbatim, the rank command verbatim. So no
//    host, exported name/value or script argument ever lands where an option is read: "no
//    element starts with '-' unless the builder put it there";
//  - the host value is exactly the plan's hosts, or a hostfile with one "host slots" line per
//    host and no host in argv; -np/-n is the plan's np;
//  - in Auto mode no argv element reaches the kernel's 128 KiB MAX_ARG_STRLEN;
//  - redacted_argv() hides the value of every secret-looking export, and a rejected export
//    request does not show it in its error either.
#include <cstdint>
#include <map>
#include <string_view>
#include <string>
#include <vector>

#include "agent_error.h"
#include "dry_run.h"
#include "env_forwarding.h"
#include "exit_codes.h"
#include "fuzz_check.h"
#include "hosts.h"
#include "mpiexec_argv.h"
#include "plan.h"

namespace {

using gj::fuzz::is_valid_dns_name;

bool secret_name(const std::string& name) {  // the secret-looking names, case-insensitive
  std::string u;
  for (const char c : name) u += (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
  for (const char* w : {"KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"})
    if (u.find(w) != std::string::npos) return true;
  return false;
}

bool is_identifier_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

// Every option the builders may emit and how many values follow it. Anything else in the
// builder's part of argv is a finding.
const std::map<std::string, int>& builder_flags() {
  static const std::map<std::string, int> flags = {
      {"--allow-run-as-root", 0}, {"--host", 1}, {"--hostfile", 1}, {"-np", 1}, {"--map-by", 1},
      {"--mca", 2}, {"--prtemca", 2}, {"-x", 1}, {"-hosts", 1}, {"-f", 1}, {"-machinefile", 1},
      {"-n", 1}, {"-ppn", 1}, {"-launcher", 1}, {"-bootstrap", 1}, {"-bootstrap-exec-args", 1},
      {"-genvlist", 1}, {"-genv", 2}, {"-genvnone", 0}, {"-localhost", 1},
      {"--bind-to", 1}, {"-bind-to", 1},  // the CPU binding; Intel's is a -genv
  };
  return flags;
}

// The state dir's contract (sidefx is_plain_config_path): absolute, [A-Za-z0-9._/+@,=-] only.
bool is_plain_path(const std::string& p) {
  if (p.empty() || p[0] != '/') return false;
  for (const char c : p) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::string_view("._/+@,=-").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

std::vector<std::string> split_blanks(const std::string& s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = s.find_first_not_of(" \t", i);
    if (b == std::string::npos) break;
    const auto e = s.find_first_of(" \t", b);
    out.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
    i = e == std::string::npos ? s.size() : e;
  }
  return out;
}

int to_int(const std::string& s, int lo, int hi, int fallback) {
  if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) return fallback;
  const int v = std::stoi(s);
  return v < lo ? lo : (v > hi ? hi : v);
}

struct Input {
  std::vector<std::string> hosts;
  std::vector<std::int64_t> slots;
  gj::Invocation inv{"/opt/job/train.py", {}, {}};
  gj::EnvMap env;
  std::vector<std::string> requests;
  bool defaults = true;
  std::vector<std::string> identity_files;
};

// Returns false when the input holds no runnable plan (the planner would have rejected it).
bool decode(const std::string& text, Input& in) {
  int replicate = 1;
  for (const auto& [key, value] : gj::fuzz::parse_env_lines(text)) {
    if (key == "H") {
      try {
        const auto list = gj::parse_host_list("MPI_HOST", value);
        in.hosts.insert(in.hosts.end(), list.hosts.begin(), list.hosts.end());
      } catch (const gj::AgentError&) {
        return false;  // fuzz_hosts covers rejection
      }
    } else if (key == "N") {
      replicate = to_int(value, 1, 2000, 1);
    } else if (key == "S") {
      in.slots.push_back(to_int(value, 1, 100000, 1));
    } else if (key == "P") {
      in.inv.script = value;
    } else if (key == "A") {
      in.inv.script_args.push_back(value);
    } else if (key == "M") {
      in.inv.mpi_args.push_back(value);
    } else if (key == "I") {
      // Identity files come from prepare_client_keys(): paths under the validated state dir.
      if (is_plain_path(value)) in.identity_files.push_back(value);
    } else if (key == "E") {
      const auto eq = value.find('=');
      in.env[value.substr(0, eq)] = eq == std::string::npos ? "" : value.substr(eq + 1);
    } else if (key == "X") {
      in.requests.push_back(value);
    } else if (key == "D") {
      in.defaults = value != "0";
    }
  }
  if (in.inv.script.empty()) return false;  // main() requires a script
  const auto base = in.hosts;
  for (int r = 1; r < replicate; ++r)
    for (const auto& h : base) {
      const std::string copy = "r" + std::to_string(r) + "-" + h;
      if (is_valid_dns_name(copy)) in.hosts.push_back(copy);
    }
  std::map<std::string, int> seen;
  for (const auto& h : in.hosts)
    if (++seen[h] > 1) return false;  // the parser rejects duplicates
  return !in.hosts.empty();
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < s.size()) {
    const auto nl = s.find('\n', start);
    GJ_FUZZ_CHECK(nl != std::string::npos, "hostfile does not end with a newline");
    out.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

void check_command(const gj::LaunchPlan& plan, const gj::MpiexecRequest& req, const gj::MpiexecCommand& cmd,
                   const std::string& what) {
  const auto& a = cmd.argv;
  const std::size_t tail = plan.mpi_args.size() + plan.command.size();
  GJ_FUZZ_CHECK(a.size() > tail && a[0] == req.mpiexec, what + ": argv[0] is not mpiexec");
  const std::size_t prefix_end = a.size() - tail;
  GJ_FUZZ_CHECK(std::equal(plan.mpi_args.begin(), plan.mpi_args.end(), a.begin() + static_cast<long>(prefix_end)),
                what + ": user mpiexec args changed or moved");
  GJ_FUZZ_CHECK(std::equal(plan.command.begin(), plan.command.end(), a.end() - static_cast<long>(plan.command.size())),
                what + ": rank command changed or moved");

  const auto redacted = gj::redacted_argv(a);
  GJ_FUZZ_CHECK(redacted.size() == a.size(), what + ": redaction changed the argv length");

  const bool hostfile_used = cmd.hostfile.has_value();
  std::string host_value;
  std::string np_value;
  bool host_option = false;
  for (std::size_t i = 1; i < prefix_end;) {
    const auto flag = builder_flags().find(a[i]);
    GJ_FUZZ_CHECK(flag != builder_flags().end(), what + ": unexpected word in the builder's options: " + a[i]);
    const auto arity = static_cast<std::size_t>(flag->second);
    GJ_FUZZ_CHECK(i + arity < prefix_end, what + ": option " + a[i] + " lacks its value");
    const std::string& opt = a[i];
    if (opt == "--mca" || opt == "--prtemca" || opt == "-bootstrap-exec-args") {
      // The launcher splits these ssh arguments at blanks: each must come back as one word.
      const std::string& value = a[i + arity];
      if (a[i + 1].find("sh_args") != std::string::npos || opt == "-bootstrap-exec-args")
        GJ_FUZZ_CHECK(split_blanks(value) == gj::ssh_client_args(req.ssh), what + ": ssh args split differently: " + value);
    }
    if (opt == "--bind-to" || opt == "-bind-to")
      GJ_FUZZ_CHECK(a[i + 1] == "none", what + ": the builders only unbind: " + a[i + 1]);
    if (opt == "--host" || opt == "-hosts") {
      host_option = true;
      host_value = a[i + 1];
    } else if (opt == "--hostfile" || opt == "-f" || opt == "-machinefile") {
      GJ_FUZZ_CHECK(hostfile_used && a[i + 1] == req.hostfile_path, what + ": hostfile option without the hostfile");
    } else if (opt == "-np" || opt == "-n") {
      np_value = a[i + 1];
    } else if (opt == "-x") {
      const std::string& v = a[i + 1];
      GJ_FUZZ_CHECK(!v.empty() && is_identifier_start(v[0]), what + ": -x value is not NAME[=VALUE]: " + v);
      const auto eq = v.find('=');
      if (eq != std::string::npos && secret_name(v.substr(0, eq)) && eq + 1 < v.size())
        GJ_FUZZ_CHECK(redacted[i + 1] == v.substr(0, eq) + "=<redacted>", what + ": secret not redacted: " + v);
    } else if (opt == "-genv") {
      GJ_FUZZ_CHECK(!a[i + 1].empty() && is_identifier_start(a[i + 1][0]), what + ": -genv name: " + a[i + 1]);
      // The whole value word is replaced: a short secret ("a") may be a substring of the
      // marker itself, so the check is equality, not absence.
      if (secret_name(a[i + 1]) && !a[i + 2].empty())
        GJ_FUZZ_CHECK(redacted[i + 2] == "<redacted>", what + ": -genv secret not redacted: " + a[i + 1]);
    }
    i += 1 + arity;
  }

  for (const auto& [name, value] : cmd.env)
    if (name == "HYDRA_LAUNCHER_EXTRA_ARGS")
      GJ_FUZZ_CHECK(split_blanks(value) == gj::ssh_client_args(req.ssh), what + ": ssh args split differently: " + value);
  GJ_FUZZ_CHECK(np_value == std::to_string(plan.np), what + ": -np is " + np_value);
  if (hostfile_used) {
    GJ_FUZZ_CHECK(!host_option, what + ": both a hostfile and a host argument");
    const auto lines = lines_of(cmd.hostfile->content);
    GJ_FUZZ_CHECK(lines.size() == plan.hosts.size(), what + ": hostfile line count != hosts");
    const bool openmpi = req.flavour == gj::MpiFlavour::OpenMpi4 || req.flavour == gj::MpiFlavour::OpenMpi5;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const auto& h = plan.hosts[i];
      const std::string want = h.host + (openmpi ? " slots=" : ":") + std::to_string(h.slots);
      GJ_FUZZ_CHECK(lines[i] == want, what + ": hostfile line " + lines[i]);
    }
  } else {
    GJ_FUZZ_CHECK(host_option, what + ": neither a hostfile nor a host argument");
    if (req.flavour == gj::MpiFlavour::Intel) {
      std::string names;
      for (const auto& h : plan.hosts) names += (names.empty() ? "" : ",") + h.host;
      GJ_FUZZ_CHECK(host_value == names, what + ": -hosts value");
    } else {
      GJ_FUZZ_CHECK(host_value == gj::hosts_argument(plan.hosts), what + ": host value");
    }
  }
  if (req.hostfile_mode == gj::HostfileMode::Auto)
    for (const auto& w : a) GJ_FUZZ_CHECK(w.size() < 128 * 1024, what + ": argv element over MAX_ARG_STRLEN");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Input in;
  if (!decode(text, in)) return 0;

  gj::LaunchPlan plan;
  for (std::size_t i = 0; i < in.hosts.size(); ++i)
    plan.hosts.push_back({in.hosts[i], in.slots.empty() ? 1 : in.slots[i % in.slots.size()]});
  for (const auto& h : plan.hosts) plan.np += h.slots;
  plan.command = gj::rank_command(in.inv, "python3");
  plan.mpi_args = in.inv.mpi_args;
  try {
    plan.exports = gj::select_exports(in.env, in.requests, in.defaults).vars;
  } catch (const gj::AgentError& e) {
    GJ_FUZZ_CHECK(e.message.find_first_of("\n\r") == std::string::npos, "multi-line error: " + e.message);
    // A rejected NAME=VALUE request must not print a secret-looking name's value. Only values
    // holding a '%' (no message text has one) are checked, so a match cannot be a coincidence.
    for (const auto& r : in.requests) {
      const auto eq = r.find('=');
      if (eq == std::string::npos || !secret_name(r.substr(0, eq))) continue;
      const std::string value = r.substr(eq + 1);
      if (value.size() >= 2 && value.find('%') != std::string::npos)
        GJ_FUZZ_CHECK(e.message.find(value) == std::string::npos, "error shows a secret value: " + e.message);
    }
    return 0;
  }

  for (const auto flavour : {gj::MpiFlavour::OpenMpi4, gj::MpiFlavour::OpenMpi5, gj::MpiFlavour::Mpich,
                             gj::MpiFlavour::Intel}) {
    for (const auto mode : {gj::HostfileMode::Auto, gj::HostfileMode::Always, gj::HostfileMode::Never}) {
      gj::MpiexecRequest req;
      req.flavour = flavour;
      req.mpiexec = "/usr/bin/mpiexec";
      req.hostfile_mode = mode;
      req.hostfile_path = "/run/gj-mpirun/hostfile";
      req.ssh.identity_files = in.identity_files;
      const auto cmd = gj::build_mpiexec_command(plan, req);
      check_command(plan, req, cmd, std::string(gj::to_string(flavour)) + "/mode" + std::to_string(static_cast<int>(mode)));
    }
  }
  return 0;
}
