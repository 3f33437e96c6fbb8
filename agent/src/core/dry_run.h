// --dry-run output: text (the platform example's MPI_HOSTS=/MPI_NP= lines plus the command,
// shell-quoted) or one JSON object. Values of secret-looking variables are redacted in both.
#pragma once

#include <string>
#include <vector>

#include "mpiexec_argv.h"
#include "plan.h"
#include "sshd_config.h"

namespace gj {

// POSIX shell quoting: safe words as is, else single quotes ('\'' for a quote).
std::string shell_quote(const std::string& word);
std::string shell_join(const std::vector<std::string>& argv);

// JSON string literal with escapes; always valid UTF-8 (a byte that is not part of a UTF-8
// sequence is written as \u00XX).
std::string json_string(const std::string& s);

// argv with NAME=VALUE of secret-looking names (after -x, -genv NAME VALUE, and in
// key=value words) replaced by NAME=<redacted>.
std::vector<std::string> redacted_argv(const std::vector<std::string>& argv);

struct MasterDryRun {
  const LaunchPlan& plan;
  const MpiexecCommand& command;
  MpiFlavour flavour;
  std::string flavour_source;  // "detected from `mpiexec --version`", "--mpi/GJ_MPI", ...
  bool keys_at_run_time;       // the -i options of copied client keys are added at run time
  std::vector<std::string> preflight = {};  // what the pre-flight checks would do (preflight.h)
};

// One line: the OMP_NUM_THREADS every rank gets and why (the user's value, or the pod's CPUs
// divided among its ranks, grouped by host shape).
std::string threads_summary(const LaunchPlan& plan);

std::string master_dry_run_text(const MasterDryRun& d);
std::string master_dry_run_json(const MasterDryRun& d);

std::string worker_dry_run_text(const SshdSetup& setup);
std::string worker_dry_run_json(const SshdSetup& setup);

}  // namespace gj
