#include "child_exit.h"

#include <sys/wait.h>

#include <cerrno>
#include <string>

#include "exit_codes.h"
#include "internal.h"
#include "process_registry.h"

namespace gj {

int shell_status(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return exit_code::kInternal;
}

std::optional<int> poll_exit(int pid) {
  const auto st = poll_wait_status(pid);
  if (!st) return std::nullopt;
  return shell_status(*st);
}

std::optional<int> poll_wait_status(int pid) {
  int st = 0;
  int r;
  do r = ::waitpid(pid, &st, WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r == 0) return std::nullopt;
  if (r < 0) throw_syscall_error("waitpid(" + std::to_string(pid) + ")", errno);
  forget_owned(pid);
  return st;
}

int wait_status(int pid) {
  int st = 0;
  int r;
  do r = ::waitpid(pid, &st, 0);
  while (r < 0 && errno == EINTR);
  if (r < 0) throw_syscall_error("waitpid(" + std::to_string(pid) + ")", errno);
  forget_owned(pid);
  return st;
}

int wait_exit(int pid) { return shell_status(wait_status(pid)); }

}  // namespace gj
