// Restarts of the whole job by the master (--max-restarts / GJ_MAX_RESTARTS): which ends of an
// attempt are retried, the line the log gets for each restart, and what the ranks of attempt k
// see (GJ_RESTART_COUNT, torchrun's TORCHELASTIC_RESTART_COUNT and TORCHELASTIC_MAX_RESTARTS).
// Pure: roles.cpp runs the attempts (readiness gate, launch, summary) and asks this file.
//
// Retried: the job failed (a rank failed, or mpiexec exited non-zero without naming a rank) and
// attempts are left. Not retried: the job succeeded; it was stopped (the pod got a termination
// signal, which the master passed on); mpiexec could not start a program (126/127: a restart
// finds the same image); and every failure of the launcher itself (bad environment, readiness
// timeout, setup), which are thrown before an attempt ends and never reach this file.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "env_forwarding.h"
#include "plan.h"

namespace gj {

enum class AttemptEnd {
  Succeeded,   // mpiexec exited 0
  RankFailed,  // the job monitor named a failed rank (its summary was printed)
  JobFailed,   // mpiexec exited non-zero and no rank was named (no monitor, or mpiexec's own failure)
  Stopped,     // the master passed a termination signal (or a stop request) to the job
};

struct AttemptOutcome {
  AttemptEnd end = AttemptEnd::Succeeded;
  int status = 0;    // what gj-mpirun exits with if this attempt is the last
  std::string why;   // one line: "rank failure: rank 1 (...) killed by SIGKILL", "mpiexec exited with status 3"
};

struct RestartDecision {
  bool restart = false;
  std::string line;  // restart: the log line; otherwise why not (empty when there is nothing to say)
};

// attempt: 0 for the first run; max_restarts: GJ_MAX_RESTARTS; took: how long the attempt ran.
RestartDecision decide_restart(const AttemptOutcome& outcome, std::int64_t attempt, std::int64_t max_restarts,
                               std::chrono::milliseconds took);

// What every rank of attempt `attempt` gets, passed like the user's exports (each MPI flavour's
// own way: -x / -genv): GJ_RESTART_COUNT, TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS.
std::vector<ForwardedVar> restart_exports(std::int64_t attempt, std::int64_t max_restarts);

// The plan of attempt `attempt`: plan with restart_exports in place of any export of the same
// name (the launcher's count wins over a user's --export GJ_RESTART_COUNT=...).
LaunchPlan plan_for_attempt(const LaunchPlan& plan, std::int64_t attempt, std::int64_t max_restarts);

}  // namespace gj
