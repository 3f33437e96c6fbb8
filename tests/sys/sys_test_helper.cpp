// A small program the gj_agent_sys tests run as a child (and as a supervisor):
//   exit N               exit with status N
//   signal N             kill itself with signal N
//   group DIR            fork a grandchild in the same process group; both write DIR/<who>.pid,
//                        and on SIGTERM write DIR/<who>.term and die of SIGTERM
//   orphan DIR           leave an orphan that exits while we still run; exit 0 when someone
//                        reaped it (its /proc entry is gone), 3 when it is still a zombie,
//                        5 when it was not reparented to our parent (no subreaper)
//   supervise ARGV...    gj::run_job(ARGV, true); exit with its result (LaunchError: message, code)
//   exec ARGV...         gj::run_job(ARGV, false)
//                        (both: GJ_TEST_IGNORE=1 ignores SIGCHLD and SIGTERM first, as a careless
//                        parent or nohup would)
//   worker-sshd STATE SSHDIR PORT
//                        gj::exec_worker_sshd on 127.0.0.1:PORT (GJ_TEST_VALUE passed as SetEnv)
//   master-exit STATE SSHDIR PORT CODE
//                        gj::start_background_sshd, then return CODE from main (an agent error)
//   master STATE SSHDIR PORT ARGV...
//                        gj::start_background_sshd, then gj::run_job(ARGV, true)
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "process_registry.h"
#include "supervise.h"
#include "sshd_setup.h"

namespace {

std::string g_dir;
const char* g_who = "child";

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path + ".tmp");
  out << text;
  out.close();
  std::rename((path + ".tmp").c_str(), path.c_str());
}

void on_term(int) {
  write_file(g_dir + "/" + g_who + ".term", "term");
  signal(SIGTERM, SIG_DFL);
  raise(SIGTERM);
}

int group_mode() {
  if (fork() == 0) g_who = "grandchild";
  signal(SIGTERM, on_term);
  write_file(g_dir + "/" + g_who + ".pid", std::to_string(getpid()));
  for (int i = 0; i < 300; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return 9;  // nobody sent SIGTERM within 30 s
}

int orphan_mode() {
  int pipefd[2];
  if (pipe(pipefd) != 0) return 10;
  pid_t middle = fork();
  if (middle == 0) {
    pid_t orphan = fork();
    if (orphan == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      _exit(0);
    }
    ssize_t n = write(pipefd[1], &orphan, sizeof orphan);
    _exit(n == sizeof orphan ? 0 : 1);
  }
  pid_t orphan = 0;
  if (read(pipefd[0], &orphan, sizeof orphan) != sizeof orphan) return 11;
  waitpid(middle, nullptr, 0);  // now the orphan's parent must be the subreaper (the supervisor)
  {
    std::ifstream stat("/proc/" + std::to_string(orphan) + "/stat");
    std::string pid, comm, state;
    long ppid = 0;
    stat >> pid >> comm >> state >> ppid;
    if (!stat || ppid != static_cast<long>(getppid())) return 5;  // reparented elsewhere
  }
  for (int i = 0; i < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    std::ifstream stat("/proc/" + std::to_string(orphan) + "/stat");
    if (!stat) return 0;  // reaped
  }
  return 3;  // still there (a zombie nobody reaps)
}

std::vector<std::string> rest(int argc, char** argv, int from) { return {argv + from, argv + argc}; }

gj::SshdSetup sshd_setup(char** argv) {
  gj::SshdSetup s;
  s.state_dir = argv[2];
  s.ssh_dir = argv[3];
  s.port = std::atoi(argv[4]);
  s.listen_addresses = {"127.0.0.1"};
  s.session_env = {{"GJ_TEST_VALUE", "from-helper"}};
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string mode = argv[1];
  if (mode == "exit" && argc == 3) return std::atoi(argv[2]);
  if (mode == "signal" && argc == 3) {
    int sig = std::atoi(argv[2]);
    signal(sig, SIG_DFL);
    raise(sig);
    return 4;
  }
  if (mode == "group" && argc == 3) {
    g_dir = argv[2];
    return group_mode();
  }
  if (mode == "orphan") return orphan_mode();
  try {
    if ((mode == "supervise" || mode == "exec") && std::getenv("GJ_TEST_IGNORE") != nullptr) {
      signal(SIGCHLD, SIG_IGN);
      signal(SIGTERM, SIG_IGN);
    }
    if (mode == "supervise" || mode == "exec") return gj::run_job(rest(argc, argv, 2), mode == "supervise");
    if (mode == "worker-sshd" && argc == 5) gj::exec_worker_sshd(sshd_setup(argv));
    if (mode == "master-exit" && argc == 6) {
      gj::start_background_sshd(sshd_setup(argv));
      std::fprintf(stderr, "background sshd pid %d\n", gj::owned_process_ids().at(0));
      return std::atoi(argv[5]);
    }
    if (mode == "master" && argc > 5) {
      gj::start_background_sshd(sshd_setup(argv));
      std::fprintf(stderr, "background sshd pid %d\n", gj::owned_process_ids().at(0));
      return gj::run_job(rest(argc, argv, 5), true);
    }
  } catch (const gj::LaunchError& e) {
    std::fprintf(stderr, "%s\n", e.message.c_str());
    return e.exit_code;
  }
  return 2;
}
