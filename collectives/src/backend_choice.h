// Which backend serves which buffers: a pure function of the config and what was found.
#pragma once

#include <string>

#include "config.h"
#include "gj/collectives.h"

namespace gj {

// What the library found, agreed over all ranks (so every rank decides the same way and no
// rank waits in a collective NCCL init the others skip).
struct BackendFacts {
  bool built_with_nccl = false;
  int min_device_count = 0;  // the smallest device count of any rank
};

struct BackendPlan {
  bool use_nccl = false;      // device buffers go to NCCL
  std::string no_nccl_reason; // why not, for the gjUnsupported message of a device buffer
};

// Throws gj::Error(gjUnsupported) when GJ_COLL_BACKEND=nccl and NCCL cannot be used.
BackendPlan plan_backends(const Config& config, const BackendFacts& facts);

// The backend for a buffer kind. Host buffers always go to MPI (NCCL needs device memory);
// a device buffer without NCCL throws gj::Error(gjUnsupported) naming call and reason.
gjBackend_t backend_for(const BackendPlan& plan, bool is_device, const char* call);

}  // namespace gj
