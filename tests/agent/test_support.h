// Shared helpers for the agent's unit tests: a platform environment per case and an
// assertion that a call throws AgentError with a given exit code and message substring.
#pragma once

#include <catch2/catch.hpp>
#include <functional>
#include <string>

#include "agent_error.h"
#include "env_map.h"

namespace gj::test {

// The variables the platform writes on the master pod of job "job".
inline EnvMap master_env(const std::string& master_cpu, const std::string& master_gpu, const std::string& worker_cpu,
                         const std::string& worker_gpu, const std::string& worker_replicas) {
  return EnvMap{
      {"GJ_TRAINING_ROLE", "master"},
      {"GJ_TRAINING_VC_JOB_NAME", "job"},
      {"GJ_TRAINING_POD_NAME", "job-master-0"},
      {"GJ_TRAINING_MASTER_CPU_LIMIT", master_cpu},
      {"GJ_TRAINING_MASTER_GPU_LIMIT", master_gpu},
      {"GJ_TRAINING_MASTER_REPLICAS", "1"},
      {"GJ_TRAINING_WORKER_CPU_LIMIT", worker_cpu},
      {"GJ_TRAINING_WORKER_GPU_LIMIT", worker_gpu},
      {"GJ_TRAINING_WORKER_REPLICAS", worker_replicas},
  };
}

inline void require_agent_error(const std::function<void()>& f, int exit_code, const std::string& substring) {
  try {
    f();
  } catch (const AgentError& e) {
    INFO("message: " << e.message);
    CHECK(e.exit_code == exit_code);
    CHECK_THAT(e.message, Catch::Contains(substring));
    CHECK(e.message.find('\n') == std::string::npos);  // one line
    return;
  }
  FAIL("expected AgentError(" << exit_code << ") containing \"" << substring << "\"");
}

}  // namespace gj::test
