// gj-mpirun's exit codes, one per failure class (shell conventions for exec failures). Once the
// job runs, a rank that fails gives kRankFailed (the summary at the end of the log gives the
// rank's own status); otherwise mpiexec's own exit status is the pod's (128+N when the job was
// killed by signal N). Documented in README.md ("Exit codes").
#pragma once

namespace gj::exit_code {

inline constexpr int kOk = 0;
inline constexpr int kInternal = 1;          // a bug or an unexpected system failure
inline constexpr int kUsage = 2;             // bad command line (unknown flag, missing script arg)
inline constexpr int kBadEnvironment = 3;    // a GJ_TRAINING_* / MPI_HOST / GJ_* value is invalid
inline constexpr int kBadPlan = 4;           // inputs valid but no runnable plan (np <= 0, ...)
inline constexpr int kWorkersUnreachable = 5;// readiness deadline passed; names each host
inline constexpr int kSetupFailed = 6;       // sshd/keys/state-dir preparation failed
inline constexpr int kRankFailed = 7;        // a rank failed (exit code, signal, pod lost): the log's summary says which
inline constexpr int kPreflightFailed = 8;   // a pre-flight check failed before mpiexec: a pod short of GPUs, ECC errors, (strict) a slow pod or link
inline constexpr int kNotExecutable = 126;   // found but cannot be executed
inline constexpr int kNotFound = 127;        // sshd, mpiexec, python or the script not found

}  // namespace gj::exit_code
