// Helpers shared by the gj_agent_sys sources; not part of the contract with the agent.
#pragma once

#include <cstdint>
#include <string>
#include <sys/types.h>

namespace gj {

// Throws LaunchError{code, message}.
[[noreturn]] void throw_launch_error(int code, std::string message);
// Throws LaunchError kInternal "<call> failed: <strerror(err)>[; <fix>]".
[[noreturn]] void throw_syscall_error(const std::string& call, int err, const std::string& fix = "");

// "0644": a file mode as people read it in messages.
std::string mode_text(mode_t mode);

// CLOCK_REALTIME in ns: the time of departures the master compares across the pods' wrappers.
std::int64_t realtime_ns();

// The last non-empty line of a program's output (the one that usually says what went wrong).
std::string last_line(std::string text);

}  // namespace gj
