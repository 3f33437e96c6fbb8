#include "capture.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "child_exit.h"
#include "exit_codes.h"
#include "internal.h"
#include "spawn.h"

namespace gj {

CaptureResult run_and_capture(const std::vector<std::string>& argv, std::size_t max_bytes,
                              std::chrono::milliseconds timeout) {
  SpawnOptions opt;
  opt.capture_output = true;
  // Its own process group: a helper that forks (a wrapper script around mpiexec) is ended whole,
  // children included, here and by a termination signal (termination.h).
  opt.new_process_group = true;
  ChildProcess child = spawn_process(argv, opt);
  const auto end_group = [&] { ::kill(-child.pid, SIGKILL); };
  CaptureResult result;
  char buf[4096];
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      end_group();
      ::close(child.output_fd);
      wait_exit(child.pid);
      throw_launch_error(exit_code::kSetupFailed, "`" + argv[0] + (argv.size() > 1 ? " " + argv[1] : std::string()) +
                                                      "` did not finish within " + std::to_string(timeout.count() / 1000) +
                                                      " s");
    }
    pollfd p{child.output_fd, POLLIN, 0};
    const int pr = ::poll(&p, 1, static_cast<int>(left.count()));
    if (pr < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(child.output_fd);
      throw_syscall_error("poll", e);
    }
    if (pr == 0) continue;
    ssize_t n = ::read(child.output_fd, buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) break;
    std::size_t room = max_bytes > result.output.size() ? max_bytes - result.output.size() : 0;
    result.output.append(buf, std::min<std::size_t>(room, static_cast<std::size_t>(n)));
    if (result.output.size() >= max_bytes) {  // enough: what follows is not read at all
      end_group();
      result.truncated = true;
      break;
    }
  }
  ::close(child.output_fd);
  result.status = wait_exit(child.pid);
  end_group();  // what the helper left behind in its group (it closed our pipe, or never had it)
  return result;
}

std::string capture_output(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                           std::size_t max_bytes) {
  return run_and_capture(argv, max_bytes, timeout).output;
}

}  // namespace gj
