// run_rank_guarded without a job monitor (a rank's program under hydra; a failure is reported on
// the PMI connection), and with one: the departure times it reports.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "loopback.h"
#include "monitor_line.h"
#include "rank_guard.h"
#include "temp_dir.h"

namespace {

// What the guard wrote on its end of the PMI connection (read without blocking).
std::string pending_text(int fd) {
  std::string out;
  char buf[256];
  pollfd p{fd, POLLIN, 0};
  while (::poll(&p, 1, 0) == 1) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

// The guard as hydra's rank runs it without a job monitor.
int guarded(const std::vector<std::string>& argv, int pmi_fd) {
  gj::RankGuard g;
  g.argv = argv;
  g.pmi_fd = pmi_fd;
  g.environment = {"PATH=/usr/bin:/bin"};
  return gj::run_rank_guarded(g);
}

struct PmiPair {
  int fds[2] = {-1, -1};
  PmiPair() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0); }
  ~PmiPair() {
    ::close(fds[0]);
    ::close(fds[1]);
  }
};

}  // namespace

TEST_CASE("rank guard: the program's exit code is the rank's - a failure asks the launcher to abort") {
  struct Row {
    const char* script;
    int code;
    const char* reported;
  };
  auto row = GENERATE(Row{"exit 0", 0, ""}, Row{"exit 7", 7, "cmd=abort exitcode=7\n"},
                      Row{"exit 1", 1, "cmd=abort exitcode=1\n"});
  INFO(row.script);
  PmiPair pmi;
  CHECK(guarded({"/bin/sh", "-c", row.script}, pmi.fds[1]) == row.code);
  CHECK(pending_text(pmi.fds[0]) == row.reported);
}

TEST_CASE("rank guard: a program killed by a signal is reported as 128+N and the rank dies of N too") {
  PmiPair pmi;
  const pid_t guard = ::fork();
  REQUIRE(guard >= 0);
  if (guard == 0) {
    const int rc = guarded({"/bin/sh", "-c", "kill -USR1 $$"}, pmi.fds[1]);
    _exit(rc == 0 ? 100 : 101);  // not reached: the guard raises the signal itself
  }
  int st = 0;
  REQUIRE(::waitpid(guard, &st, 0) == guard);
  REQUIRE(WIFSIGNALED(st));
  CHECK(WTERMSIG(st) == SIGUSR1);
  CHECK(pending_text(pmi.fds[0]) == "cmd=abort exitcode=" + std::to_string(128 + SIGUSR1) + "\n");
}

TEST_CASE("rank guard: SIGTERM to the rank reaches its program - ignored signals stay ignored") {
  PmiPair pmi;
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t guard = ::fork();
  REQUIRE(guard >= 0);
  if (guard == 0) {
    ::close(ready[0]);
    ::signal(SIGHUP, SIG_IGN);  // as a launcher may leave it (nohup)
    const std::string script = "trap 'exit 42' TERM; kill -HUP $$; echo x >&" + std::to_string(ready[1]) +
                               "; while :; do sleep 0.05; done";
    ::fcntl(ready[1], F_SETFD, 0);  // the script writes to it
    _exit(guarded({"/bin/sh", "-c", script}, pmi.fds[1]));
  }
  ::close(ready[1]);
  char c = 0;
  REQUIRE(::read(ready[0], &c, 1) == 1);  // the program runs, and survived its SIGHUP
  ::close(ready[0]);
  ::kill(guard, SIGTERM);
  int st = 0;
  REQUIRE(::waitpid(guard, &st, 0) == guard);
  REQUIRE(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 42);
  CHECK(pending_text(pmi.fds[0]) == "cmd=abort exitcode=42\n");
}

namespace {

// A rank's guard in a child process, reporting to the monitor at 127.0.0.1:port.
pid_t fork_guard_with_monitor(int rank, const std::string& script, int port) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  gj::RankGuard g;
  g.argv = {"/bin/sh", "-c", script};
  g.environment = {"PATH=/usr/bin:/bin"};
  g.monitor = std::to_string(port) + ",token,127.0.0.1";
  g.rank = rank;
  g.size = 2;
  g.local_rank = rank;
  g.pod = "pod-" + std::to_string(rank);
  _exit(gj::run_rank_guarded(g));
}

// Accepts `ranks` wrappers and reads each one's lines up to its `exit`: the exit time by rank.
std::map<int, std::int64_t> exit_times(int listen_fd, int ranks) {
  std::vector<int> conns;
  for (int i = 0; i < ranks; ++i) conns.push_back(::accept(listen_fd, nullptr, nullptr));
  std::map<int, std::string> pending;
  std::map<int, int> rank_of;
  std::map<int, std::int64_t> out;
  while (out.size() < static_cast<std::size_t>(ranks)) {
    std::vector<pollfd> fds;
    for (int c : conns) fds.push_back({c, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), 10000) <= 0) break;  // a wrapper that never reports
    for (const pollfd& p : fds) {
      if (p.revents == 0) continue;
      char buf[4096];
      const ssize_t n = ::read(p.fd, buf, sizeof buf);
      if (n <= 0) return out;
      std::string& text = pending[p.fd];
      text.append(buf, static_cast<std::size_t>(n));
      for (std::size_t nl; (nl = text.find('\n')) != std::string::npos; text.erase(0, nl + 1)) {
        const auto line = gj::parse_monitor_line(text.substr(0, nl));
        if (!line) continue;
        if (line->verb == "start") rank_of[p.fd] = static_cast<int>(line->number("rank").value_or(-1));
        if (line->verb == "exit") out[rank_of[p.fd]] = line->number("time").value_or(0);
      }
    }
  }
  for (int c : conns) ::close(c);  // the wrappers stop lingering
  return out;
}

}  // namespace

// Rank 1 fails because rank 0's program ended: it reads rank 0's pipe to its end, then spends
// 20 ms in its error path (as an MPI's abort does after "Socket closed"). Rank 0's departure
// must be the earlier one in every round. Rank 0's stderr stays open after its exit (a child
// holds it, as a data loader's workers do), so only the exit itself can wake its wrapper: one
// that noticed exits at its next 50 ms poll reported rank 1 first in about one round of five
// (multihost.exit_code named rank 1 so in CI).
TEST_CASE("rank guard: the departure time is the program's exit - a peer failing 20 ms after it leaves later") {
  gj::test::TempDir dir;
  gj::test::Listener monitor("127.0.0.1", 0);
  for (int round = 0; round < 15; ++round) {
    const std::string fifo = dir / ("pipe" + std::to_string(round));
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    const pid_t first = fork_guard_with_monitor(0, "sleep 1 & exec 3>" + fifo + "; sleep 0.05; exit 7", monitor.port());
    const pid_t second = fork_guard_with_monitor(1, "cat " + fifo + " >/dev/null; sleep 0.02; exit 14", monitor.port());
    REQUIRE(first > 0);
    REQUIRE(second > 0);
    const auto times = exit_times(monitor.fd(), 2);
    int st = 0;
    ::waitpid(first, &st, 0);
    CHECK(WEXITSTATUS(st) == 7);
    ::waitpid(second, &st, 0);
    CHECK(WEXITSTATUS(st) == 14);
    REQUIRE(times.size() == 2);
    INFO("round " << round << ": rank 1 left " << (times.at(1) - times.at(0)) / 1000 << " us after rank 0");
    CHECK(times.at(0) < times.at(1));
  }
}
