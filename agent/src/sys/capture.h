// Running a helper program to completion and keeping what it printed (`mpiexec --version`,
// ssh-keygen, sshd -t), bounded in time and bytes so a helper that hangs or floods cannot hang
// gj-mpirun. Throws LaunchError.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace gj {

// Result of run_and_capture: shell-style status plus everything the child wrote.
struct CaptureResult {
  int status = 0;
  std::string output;
  bool truncated = false;  // max_bytes reached: the child was killed there
};

// Runs argv to completion (stdin /dev/null), stdout+stderr capped at max_bytes (the child is
// killed there), within timeout (else killed, LaunchError kSetupFailed naming the command and
// the limit).
CaptureResult run_and_capture(const std::vector<std::string>& argv, std::size_t max_bytes = 1 << 20,
                              std::chrono::milliseconds timeout = std::chrono::minutes(2));

// run_and_capture's output whatever the exit status (for version banners; some MPI launchers
// print them with a non-zero status).
std::string capture_output(const std::vector<std::string>& argv,
                           std::chrono::milliseconds timeout = std::chrono::seconds(10),
                           std::size_t max_bytes = 64 * 1024);

}  // namespace gj
