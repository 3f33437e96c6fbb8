#include "run_many.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "agent_error.h"
#include "child_exit.h"

namespace gj {

std::vector<RunResult> run_many(const std::vector<std::vector<std::string>>& argvs, std::chrono::milliseconds timeout,
                                std::size_t max_parallel, std::size_t max_bytes, const Environment* environment) {
  using Clock = std::chrono::steady_clock;
  std::vector<RunResult> results(argvs.size());
  struct Running {
    std::size_t index;
    ChildProcess child;
  };
  std::vector<Running> running;
  std::size_t next = 0;
  const auto deadline = Clock::now() + timeout;
  const auto start_more = [&] {
    while (next < argvs.size() && running.size() < std::max<std::size_t>(1, max_parallel)) {
      const std::size_t i = next++;
      SpawnOptions opt;
      opt.capture_output = true;
      opt.new_process_group = true;  // ssh and what it forks end together
      opt.environment = environment;
      try {
        running.push_back({i, spawn_process(argvs[i], opt)});
      } catch (const LaunchError& e) {
        results[i].error = e.message;
      }
    }
  };
  const auto finish = [&](std::size_t r) {
    ::close(running[r].child.output_fd);
    RunResult& res = results[running[r].index];
    res.status = wait_exit(running[r].child.pid);
    ::kill(-running[r].child.pid, SIGKILL);  // what it left behind in its group
    running.erase(running.begin() + static_cast<std::ptrdiff_t>(r));
  };
  start_more();
  char buf[4096];
  while (!running.empty()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      for (auto& r : running) {
        ::kill(-r.child.pid, SIGKILL);
        ::close(r.child.output_fd);
        wait_exit(r.child.pid);
        results[r.index].timed_out = true;
        results[r.index].status = -1;
      }
      running.clear();
      for (; next < argvs.size(); ++next) {
        results[next].timed_out = true;
        results[next].error = "not started before the deadline";
      }
      break;
    }
    std::vector<pollfd> fds;
    for (const auto& r : running) fds.push_back({r.child.output_fd, POLLIN, 0});
    const int pr = ::poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(left, 1000)));
    if (pr < 0 && errno != EINTR) break;
    if (pr <= 0) continue;
    for (std::size_t k = fds.size(); k-- > 0;) {
      if (fds[k].revents == 0) continue;
      const ssize_t n = ::read(fds[k].fd, buf, sizeof buf);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      RunResult& res = results[running[k].index];
      if (n > 0) {
        const std::size_t room = max_bytes > res.output.size() ? max_bytes - res.output.size() : 0;
        res.output.append(buf, std::min<std::size_t>(room, static_cast<std::size_t>(n)));
        if (res.output.size() < max_bytes) continue;
        ::kill(-running[k].child.pid, SIGKILL);  // enough: what follows is not read
      }
      finish(k);
    }
    start_more();
  }
  return results;
}

}  // namespace gj
