#include "rank_monitor_double.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace gj::test {
namespace {

int env_int(const char* const* names, int fallback) {
  for (const char* const* n = names; *n != nullptr; ++n) {
    if (const char* v = std::getenv(*n)) return std::atoi(v);
  }
  return fallback;
}

void write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << text;
  }
  std::rename(tmp.c_str(), path.c_str());  // readers see all of it or nothing
}

void append_file(const std::string& path, const std::string& line) {
  std::ofstream out(path, std::ios::app);
  out << line << "\n";
}

bool exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return std::string("killed by ") + (sig == SIGKILL ? "SIGKILL" : sig == SIGSEGV ? "SIGSEGV" : "a signal");
  }
  return "ended";
}

void send_line(int fd, const std::string& line) {
  const std::string text = line + "\n";
  if (::send(fd, text.data(), text.size(), MSG_NOSIGNAL) < 0) { /* the library is gone */
  }
}

[[noreturn]] void wrapper(pid_t child, int fd, const std::string& dir, int rank, int size, const DoubleOptions& o) {
  const std::string me = std::to_string(rank);
  const long start = monotonic_ms();
  std::set<int> forwarded;
  bool child_done = false, left = false, end_sent = false;
  int status = 0;
  std::string buffer;
  for (;;) {
    if (fd >= 0) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 10) > 0) {
        char chunk[1024];
        const ssize_t n = read(fd, chunk, sizeof chunk);
        if (n > 0) {
          buffer.append(chunk, static_cast<std::size_t>(n));
        } else {
          close(fd);
          fd = -1;
        }
        std::size_t nl;
        while ((nl = buffer.find('\n')) != std::string::npos) {
          const std::string line = buffer.substr(0, nl);
          buffer.erase(0, nl + 1);
          append_file(dir + "/recv." + me, line);
          if (line == "leave" && !left) {
            left = true;
            write_file(dir + "/lost." + me, "left the job: called shutdown");
          }
        }
      }
    } else {
      usleep(10000);
    }
    if (!child_done && waitpid(child, &status, WNOHANG) == child) {
      child_done = true;
      write_file(dir + "/gone_at." + me, std::to_string(monotonic_ms()));
      if (!left) write_file(dir + "/lost." + me, describe_status(status));
      write_file(dir + "/exit." + me, std::to_string(status));
    }
    int left_count = 0, exited = 0;
    std::string failure;
    for (int q = 0; q < size; ++q) {
      const std::string why = read_file(dir + "/lost." + std::to_string(q));
      if (exists(dir + "/exit." + std::to_string(q))) ++exited;
      if (why.empty()) continue;
      if (why == "left the job: called shutdown") ++left_count;
      else if (failure.empty()) failure = "rank " + std::to_string(q) + " " + why;
      if (q == rank || forwarded.count(q) != 0 || fd < 0) continue;
      forwarded.insert(q);
      send_line(fd, "lost rank=" + std::to_string(q) + " host=pod-" + std::to_string(q) + " reason=" + why);
      write_file(dir + "/sent_at." + me + "." + std::to_string(q), std::to_string(monotonic_ms()));
    }
    if (fd >= 0 && !end_sent && (left_count == size || !failure.empty())) {
      end_sent = true;
      send_line(fd, failure.empty() ? std::string("end status=ok") : "end status=failed reason=" + failure);
    }
    if (child_done && exited == size) break;
    if (monotonic_ms() - start > o.deadline_ms) {
      std::fprintf(stderr, "rank %d's wrapper: the job ran past %ld ms; killing rank %d\n", rank, o.deadline_ms, rank);
      if (!child_done) kill(child, SIGKILL);
      write_file(dir + "/verdict." + me, "the job ran past its deadline");
      std::_Exit(1);
    }
  }
  std::string verdict = "ok";
  if (status != o.expected_status) {
    verdict = "the rank " + describe_status(status) + ", expected wait status " + std::to_string(o.expected_status) +
              " (got " + std::to_string(status) + ")";
    std::fprintf(stderr, "rank %d's wrapper: %s\n", rank, verdict.c_str());
  }
  write_file(dir + "/verdict." + me, verdict);
  // The first wrapper to exit may make mpiexec end the others: exit once every verdict is in.
  for (int waited = 0; waited < 5000; waited += 10) {
    int verdicts = 0;
    for (int q = 0; q < size; ++q) verdicts += exists(dir + "/verdict." + std::to_string(q)) ? 1 : 0;
    if (verdicts == size) break;
    usleep(10000);
  }
  std::_Exit(verdict == "ok" ? 0 : 1);
}

}  // namespace

long monotonic_ms() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int env_rank() {
  static const char* const names[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", nullptr};
  return env_int(names, 0);
}

int env_size() {
  static const char* const names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", nullptr};
  return env_int(names, 1);
}

std::string run_under_double(const std::string& base_dir, const DoubleOptions& o) {
  const char* job = std::getenv("PMIX_NAMESPACE");
  if (job == nullptr) job = std::getenv("PMI_KVSNAME");
  std::string dir = base_dir + "/" + (job != nullptr ? job : "job");
  for (char& ch : dir) {
    if (ch == '@' || ch == ',') ch = '_';
  }
  for (std::size_t at = 1; at != std::string::npos; at = dir.find('/', at + 1)) {
    mkdir(dir.substr(0, at).c_str(), 0755);  // mkdir -p
  }
  mkdir(dir.c_str(), 0755);
  int sv[2] = {-1, -1};
  if (o.monitor && socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    std::perror("socketpair");
    std::exit(1);
  }
  const pid_t child = fork();
  if (child < 0) {
    std::perror("fork");
    std::exit(1);
  }
  if (child == 0) {
    if (o.monitor) {
      close(sv[0]);
      setenv("GJ_RANK_MONITOR_FD", std::to_string(sv[1]).c_str(), 1);
    }
    return dir;
  }
  if (o.monitor) close(sv[1]);
  wrapper(child, o.monitor ? sv[0] : -1, dir, env_rank(), env_size(), o);
}

}  // namespace gj::test
