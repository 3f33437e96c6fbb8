#include "backend_choice.h"

#include "error.h"

namespace gj {

BackendPlan plan_backends(const Config& config, const BackendFacts& facts) {
  BackendPlan plan;
  if (config.backend == BackendChoice::Mpi) {
    plan.no_nccl_reason = "GJ_COLL_BACKEND=mpi disables NCCL (unset it to use NCCL for device buffers)";
  } else if (!facts.built_with_nccl) {
    plan.no_nccl_reason = "this build of gj collectives has no NCCL backend (rebuild with CUDA and NCCL found)";
  } else if (facts.min_device_count <= 0) {
    plan.no_nccl_reason = "at least one rank sees no CUDA device";
  } else {
    plan.use_nccl = true;
  }
  if (config.backend == BackendChoice::Nccl && !plan.use_nccl) {
    throw Error(gjUnsupported, "GJ_COLL_BACKEND=nccl but " + plan.no_nccl_reason +
                                   "; use GJ_COLL_BACKEND=auto to fall back to MPI");
  }
  return plan;
}

gjBackend_t backend_for(const BackendPlan& plan, bool is_device, const char* call) {
  if (!is_device) return gjBackendMpi;
  if (!plan.use_nccl) {
    throw Error(gjUnsupported, std::string(call) + ": device buffer but " + plan.no_nccl_reason);
  }
  return gjBackendNccl;
}

}  // namespace gj
