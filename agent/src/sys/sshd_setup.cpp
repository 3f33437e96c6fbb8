// Preparing and starting sshd for MPI: state dir, host keys, authorized_keys, sshd_config.
// Processes are started through spawn.h (spawn_process, exec_job), never here.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "exit_codes.h"
#include "internal.h"
#include "agent_error.h"
#include "capture.h"
#include "child_exit.h"
#include "path_lookup.h"
#include "process_registry.h"
#include "spawn.h"
#include "warnings.h"
#include "sshd_setup.h"
#include "private_files.h"
#include "quote.h"
#include "sshd_config.h"

namespace gj {
namespace {

[[noreturn]] void fail(int code, const std::string& message) { throw LaunchError{code, message}; }

void check_sshd(const SshdSetup& setup) {
  try {
    resolve_executable(setup.sshd_path, current_path_env());
  } catch (const LaunchError& e) {
    fail(e.exit_code, "sshd: " + e.message + "; install openssh-server in the image or set GJ_SSHD");
  }
}

std::string host_key_path(const SshdSetup& s) { return s.state_dir + "/ssh_host_ed25519_key"; }

// ed25519 only: generation takes milliseconds and every OpenSSH client since 6.5 accepts it.
void ensure_host_key(const SshdSetup& setup) {
  const std::string key = host_key_path(setup);
  if (is_regular_file(key) && is_regular_file(key + ".pub")) {  // this pod's key, from an earlier start
    // sshd refuses a private host key readable by others ("no hostkeys available"): a key left
    // with a wider mode would keep the pod broken across restarts.
    struct stat st{};
    if (::stat(key.c_str(), &st) == 0 && (st.st_mode & 077) == 0) return;
    if (::chmod(key.c_str(), 0600) == 0) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
      warn("host key " + key + " had mode " + mode + "; set to 600, which sshd requires of a private host key");
      return;
    }
  }
  ::unlink(key.c_str());
  ::unlink((key + ".pub").c_str());
  std::string keygen;
  try {
    keygen = resolve_executable(setup.ssh_keygen, current_path_env());
  } catch (const LaunchError& e) {
    fail(exit_code::kNotFound, "ssh-keygen (for sshd host keys): " + e.message +
                                   "; install openssh-client in the image or set GJ_SSH_KEYGEN");
  }
  CaptureResult r = run_and_capture({keygen, "-q", "-t", "ed25519", "-N", "", "-C", "gj-mpirun host key", "-f", key});
  if (r.status != 0)
    fail(exit_code::kSetupFailed, keygen + " -t ed25519 -f " + key + " failed with status " + std::to_string(r.status) +
                                      ": " + last_line(r.output));
}

void warn_if_root_locked(const SshdSetup& setup) {
  if (::geteuid() != 0) return;
  std::ifstream in(setup.shadow_file);
  std::stringstream text;
  text << in.rdbuf();
  if (shadow_account_locked(text.str(), "root"))
    warn("root's password field in " + setup.shadow_file +
         " starts with '!' (locked): sshd with UsePAM no refuses every login of a locked account, keys "
         "included, so MPI ranks cannot start on this node; unlock it without a password in the image: "
         "usermod -p '*' root");
}

// The full preparation both roles share; returns the sshd_config path.
std::string prepare_sshd(const SshdSetup& setup) {
  check_sshd(setup);
  if (setup.port < 1 || setup.port > 65535)
    fail(exit_code::kBadEnvironment, "GJ_SSH_PORT=" + std::to_string(setup.port) + " is not a TCP port (1-65535)");
  if (!is_plain_config_path(setup.state_dir))
    fail(exit_code::kBadEnvironment, quoted_setting("GJ_STATE_DIR", setup.state_dir) +
                                         " must be an absolute path of letters, digits and ._/+@,=- only (it is written into sshd_config)");
  ensure_private_dir(setup.state_dir, "GJ_STATE_DIR");
  ensure_privsep_dir(setup.privsep_dir);
  ensure_host_key(setup);
  warn_if_root_locked(setup);
  copy_private_file(setup.ssh_dir + "/authorized_keys", setup.state_dir + "/authorized_keys");
  struct stat ak{};
  if (::stat((setup.state_dir + "/authorized_keys").c_str(), &ak) == 0 && ak.st_size == 0)
    warn(setup.ssh_dir + "/authorized_keys is empty: no key can log in to this pod, so no MPI rank can start here; "
         "mount the job's ssh secret with its public key");

  SshdConfigSpec spec;
  spec.port = setup.port;
  spec.listen_addresses = setup.listen_addresses;
  spec.host_keys = {host_key_path(setup)};
  spec.authorized_keys_file = setup.state_dir + "/authorized_keys";
  spec.pid_file = setup.state_dir + "/sshd.pid";
  spec.session_env = setup.session_env;
  RenderedSshdConfig cfg = render_sshd_config(spec);
  for (const auto& w : cfg.warnings) warn(w);
  const std::string path = sshd_config_path(setup.state_dir);
  write_private_file(path, cfg.text, 0600);
  // Feature test, not a version guess: does this sshd take the keyword on top of our file?
  if (run_and_capture({setup.sshd_path, "-t", "-f", path, "-o", "PerSourcePenalties=no"}).status == 0) {
    spec.no_per_source_penalties = true;
    write_private_file(path, render_sshd_config(spec).text, 0600);
  }

  // sshd -t reports a bad configuration (or an unusable host key) as one clear line now,
  // instead of a crash loop of the pod later.
  CaptureResult t = run_and_capture({setup.sshd_path, "-t", "-f", path});
  if (t.status != 0)
    fail(exit_code::kSetupFailed, setup.sshd_path + " -t -f " + path + " rejected the generated configuration: " +
                                      last_line(t.output));
  return path;
}

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// "" when addr:port can be bound now, else why not.
std::string port_taken(const std::string& addr, int port) {
  const bool v6 = addr.find(':') != std::string::npos;
  const int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";  // no such family here: sshd will say so itself
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc;
  if (v6) {
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    if (::inet_pton(AF_INET6, addr.c_str(), &a.sin6_addr) != 1) a.sin6_addr = in6addr_any;
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (::inet_pton(AF_INET, addr.c_str(), &a.sin_addr) != 1) a.sin_addr.s_addr = htonl(INADDR_ANY);
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  const int e = errno;
  ::close(fd);
  if (rc == 0 || e == EADDRNOTAVAIL || e == EAFNOSUPPORT) return "";
  return std::string("bind: ") + std::strerror(e);
}

}  // namespace

void exec_worker_sshd(const SshdSetup& setup) {
  const std::string config = prepare_sshd(setup);
  // sshd's log (our stderr) through a relay that leaves out the readiness probe's lines.
  const int log = start_log_filter(STDERR_FILENO, is_bare_preauth_close);
  if (::dup2(log, STDERR_FILENO) < 0) throw_syscall_error("dup2 (sshd log relay)", errno);
  ::close(log);
  exec_job(sshd_argv(setup.sshd_path, config));
}

int run_worker_sshd(const SshdSetup& setup, JobEnd* end) {
  const std::string config = prepare_sshd(setup);
  const int log = start_log_filter(STDERR_FILENO, is_bare_preauth_close);
  if (::dup2(log, STDERR_FILENO) < 0) throw_syscall_error("dup2 (sshd log relay)", errno);
  ::close(log);
  return run_job(sshd_argv(setup.sshd_path, config), true, nullptr, end);
}

void start_background_sshd(const SshdSetup& setup) {
  const std::string config = prepare_sshd(setup);
  // Another process on the port of one address family (0.0.0.0:PORT taken, [::]:PORT free) lets
  // sshd start on the other one, and our readiness probe would reach the foreign process.
  for (const auto& addr : setup.listen_addresses) {
    const std::string holder = port_taken(addr, setup.port);
    if (!holder.empty())
      fail(exit_code::kSetupFailed, "port " + std::to_string(setup.port) + " is already in use on " + addr + " (" + holder +
                                        "); the master's sshd needs it on every listen address: stop that process or "
                                        "set --ssh-port/GJ_SSH_PORT");
  }
  const std::string pid_file = setup.state_dir + "/sshd.pid";
  ::unlink(pid_file.c_str());
  SpawnOptions opt;
  opt.new_process_group = true;  // signals for the job's group do not hit it; we stop it ourselves
  // Its log through a relay that leaves out the readiness probes' lines (sshd_config.h).
  opt.stderr_fd = start_log_filter(STDERR_FILENO, is_bare_preauth_close);
  ChildProcess sshd;
  try {
    sshd = spawn_process(sshd_argv(setup.sshd_path, config), opt);
  } catch (...) {
    ::close(opt.stderr_fd);
    throw;
  }
  ::close(opt.stderr_fd);
  register_owned_process(sshd.pid);

  // sshd writes its PidFile after binding its listen sockets, so our pid there means our sshd
  // listens (the port checks above rule out another process on it). No test connection: sshd
  // would log it as a failed key exchange in a healthy master's log.
  const auto deadline = std::chrono::steady_clock::now() + setup.listen_timeout;
  const std::string want = std::to_string(sshd.pid);
  for (;;) {
    if (auto status = poll_exit(sshd.pid))
      fail(exit_code::kSetupFailed, setup.sshd_path + " (background, port " + std::to_string(setup.port) +
                                        ") exited with status " + std::to_string(*status) +
                                        " before listening; its log is above (port in use?)");
    if (read_first_line(pid_file) == want) return;
    if (std::chrono::steady_clock::now() >= deadline) {
      terminate_owned_processes(std::chrono::milliseconds(500));
      fail(exit_code::kSetupFailed, setup.sshd_path + " did not listen on port " + std::to_string(setup.port) + " within " +
                                        std::to_string(setup.listen_timeout.count()) + " ms; its log is above");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::vector<std::string> prepare_client_keys(const SshdSetup& setup) {
  ensure_private_dir(setup.state_dir, "GJ_STATE_DIR");
  const std::string dir = setup.state_dir + "/ssh";
  ensure_private_dir(dir, "GJ_STATE_DIR/ssh");
  DIR* d = ::opendir(setup.ssh_dir.c_str());
  if (d == nullptr)
    fail(exit_code::kSetupFailed, "opendir " + setup.ssh_dir + " (GJ_SSH_DIR) failed: " + std::strerror(errno) +
                                      "; mount the job's ssh secret there or set GJ_SSH_DIR");
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
  ::closedir(d);
  std::sort(names.begin(), names.end());
  std::vector<std::string> keys;
  for (const auto& n : names) {
    bool is_key = n.rfind("id_", 0) == 0 && !(n.size() > 4 && n.compare(n.size() - 4, 4, ".pub") == 0);
    bool is_extra = n == "config" || n == "known_hosts";
    if (!is_key && !is_extra) continue;
    const std::string src = setup.ssh_dir + "/" + n;
    // The copied key's path goes into plm_rsh_args / HYDRA_LAUNCHER_EXTRA_ARGS, which the MPI
    // launchers split on spaces: refuse a name that would not survive that.
    if (is_key && !is_plain_config_path(dir + "/" + n))
      fail(exit_code::kSetupFailed, "client key " + quoted_value(src) + " (GJ_SSH_DIR) has a name with characters other "
                                    "than letters, digits and ._+@,=- (MPI launchers split ssh arguments on spaces); "
                                    "rename it, e.g. id_rsa");
    struct stat st{};
    if (::stat(src.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;  // ..data and friends
    copy_private_file(src, dir + "/" + n);
    if (is_key) keys.push_back(dir + "/" + n);
  }
  if (keys.empty())
    fail(exit_code::kSetupFailed, "no private key (id_*) in " + setup.ssh_dir +
                                      " (GJ_SSH_DIR); mount the job's ssh secret (Volcano ssh plugin) there");
  return keys;
}

}  // namespace gj
