// The agent's two error types, shared by the pure core and the side-effect library (both link
// this small target; neither reaches into the other for them). Every check that rejects an
// input or a system call throws one with the documented exit code of its class (exit_codes.h)
// and a one-line message naming the input or call, the value seen and the fix. main() turns
// them into the process exit status.
#pragma once

#include <string>

namespace gj {

// A rejected input (planning, settings, host lists).
struct AgentError {
  int exit_code;
  std::string message;
};

// A failed side effect (exec, sshd, files, sockets).
struct LaunchError {
  int exit_code;
  std::string message;  // one line: the call, the value, the fix
};

}  // namespace gj
