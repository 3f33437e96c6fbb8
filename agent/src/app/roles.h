// The two straight-line runs of gj-mpirun, one per role: each is a sequence of checked steps
// from the parsed inputs to the one exec. Pure planning is called, side effects happen here
// (through sys/ and local_files) in the documented order.
#pragma once

#include <string>
#include <vector>

#include "cli.h"
#include "env_map.h"
#include "job_spec.h"

namespace gj {

// Returns the process exit status (dry run: 0), or does not return (exec).
int run_master(const JobSpec& spec, const EnvMap& env, const CommandLine& cli);
int run_worker(const JobSpec& spec, const EnvMap& env, const CommandLine& cli);
// The per-rank mode mpiexec starts (args after `--rank-exec`): sets torchrun's variables
// (rank_env.h) and execs the command. Does not return unless the exec fails.
int run_rank(const std::vector<std::string>& args, const EnvMap& env);

}  // namespace gj
