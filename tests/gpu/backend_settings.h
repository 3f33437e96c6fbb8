// The settings a communicator takes from this process's environment (config.h), for the tests
// that construct the NCCL backend directly: the same snapshot, so GJ_NCCL_LIBRARY (the test
// NCCL), NCCL_MULTI_RANK_GPU_ENABLE and GJ_COLL_* apply to them as to a communicator.
#pragma once

#include "config.h"
#include "env.h"

namespace gj::test {

inline gj::Config settings() { return gj::parse_config(gj::snapshot_coll_env()); }

}  // namespace gj::test
