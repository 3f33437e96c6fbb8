// Running one short command per pod at once (the pre-flight probes over ssh) and keeping what each
// printed: bounded in time and bytes as a whole, so a pod whose ssh hangs delays the job by the
// deadline at most. Throws nothing for a command that fails: its result says how.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "spawn.h"

namespace gj {

struct RunResult {
  int status = -1;        // shell-style status; -1 when it did not end (timed out) or never started
  std::string output;     // stdout + stderr, at most max_bytes
  bool timed_out = false;
  std::string error;      // why it never started ("" when it did)
};

// Starts every argv (up to max_parallel at once, the rest as those end), each in its own process
// group with stdin /dev/null; whatever still runs at `timeout` is killed (its group) and marked
// timed_out. Results in the order of `argvs`.
std::vector<RunResult> run_many(const std::vector<std::vector<std::string>>& argvs, std::chrono::milliseconds timeout,
                                std::size_t max_parallel = 128, std::size_t max_bytes = 64 * 1024,
                                const Environment* environment = nullptr);

}  // namespace gj
