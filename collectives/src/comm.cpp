#include "comm.h"

#include <exception>

#include "cuda/device.h"
#include "env.h"
#include "error.h"
#include "log.h"
#include "mpi/mpi_backend.h"
#include "mpi/mpi_check.h"
#ifdef GJ_HAVE_NCCL
#include "nccl/nccl_backend.h"
#endif

namespace gj {
namespace {

#ifdef GJ_HAVE_NCCL
constexpr bool kBuiltWithNccl = true;
#else
constexpr bool kBuiltWithNccl = false;
#endif

void local_rank_and_size(gjComm& c) {
  MPI_Comm node = MPI_COMM_NULL;
  mpi_check(MPI_Comm_split_type(c.mpi, MPI_COMM_TYPE_SHARED, c.rank, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)");
  const int rc_rank = MPI_Comm_rank(node, &c.local_rank);
  const int rc_size = MPI_Comm_size(node, &c.local_size);
  MPI_Comm_free(&node);
  mpi_check(rc_rank, "MPI_Comm_rank(node)");
  mpi_check(rc_size, "MPI_Comm_size(node)");
}

// Each rank's own view (environment, devices) differs; every choice that makes a rank join
// a collective setup step (NCCL init, shared memory) must be the same on all ranks.
struct Agreed {
  int min_device_count;
  bool shm;
};

Agreed agree(const gjComm& c) {
  int v[2] = {kBuiltWithNccl && c.config.backend != BackendChoice::Mpi ? cuda::device_count() : 0,
              c.config.shm ? 1 : 0};
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_INT, MPI_MIN, c.mpi), "MPI_Allreduce(backend agreement)");
  return Agreed{v[0], v[1] != 0};
}

std::unique_ptr<shm::ShmAllreduce> make_shm(gjComm& c, bool enabled) {
  if (!enabled) {
    log(c.config, LogLevel::Info, c.rank, "shared-memory allreduce off (GJ_COLL_SHM=0 on some rank)");
    return nullptr;
  }
#ifdef GJ_HAVE_SHM
  std::string why_not;
  auto shm = shm::ShmAllreduce::create(c.mpi, &why_not);
  if (!shm) log(c.config, LogLevel::Info, c.rank, "shared-memory allreduce not used: " + why_not);
  return shm;
#else
  log(c.config, LogLevel::Debug, c.rank, "shared-memory allreduce not built in");
  return nullptr;
#endif
}

// The environment is per rank: a bad value on one rank must fail every rank, or the others
// would wait in the next collective step.
Config agreed_config(MPI_Comm parent) {
  Config config;
  std::exception_ptr failure;
  try {
    config = parse_config(snapshot_coll_env());
  } catch (const Error&) {
    failure = std::current_exception();
  }
  int ok = failure ? 0 : 1;
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, parent), "MPI_Allreduce(config check)");
  if (failure) std::rethrow_exception(failure);
  if (ok == 0) {
    throw Error(gjInvalidArgument, "a GJ_COLL_* variable is invalid on another rank (its error names it)");
  }
  return config;
}

}  // namespace

}  // namespace gj

gj::Backend& gjComm::backend_for(bool is_device, const char* call) {
  if (gj::backend_for(plan, is_device, call) == gjBackendNccl) return *device;
  return *host;
}

namespace gj {

std::unique_ptr<gjComm> create_comm(MPI_Comm parent) {
  auto c = std::make_unique<gjComm>();
  c->config = agreed_config(parent);
  c->fusion_threshold = c->config.fusion_bytes;
  mpi_check(MPI_Comm_dup(parent, &c->mpi), "MPI_Comm_dup");
  try {
    mpi_check(MPI_Comm_set_errhandler(c->mpi, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    mpi_check(MPI_Comm_rank(c->mpi, &c->rank), "MPI_Comm_rank");
    mpi_check(MPI_Comm_size(c->mpi, &c->size), "MPI_Comm_size");
    local_rank_and_size(*c);
    const Agreed agreed = agree(*c);
    c->plan = plan_backends(c->config, BackendFacts{kBuiltWithNccl, agreed.min_device_count});
    c->host = make_mpi_backend(c->mpi, make_shm(*c, agreed.shm));
#ifdef GJ_HAVE_NCCL
    if (c->plan.use_nccl) c->device = make_nccl_backend(c->mpi, c->local_rank, c->config);
#endif
    log(c->config, LogLevel::Info, c->rank,
        "communicator ready: size=" + std::to_string(c->size) + " local_size=" +
            std::to_string(c->local_size) + " device buffers: " +
            (c->plan.use_nccl ? std::string("NCCL") : "unsupported (" + c->plan.no_nccl_reason + ")"));
  } catch (...) {
    c->device.reset();
    c->host.reset();
    MPI_Comm_free(&c->mpi);
    throw;
  }
  return c;
}

void destroy_comm(std::unique_ptr<gjComm> c) {
  c->device.reset();
  c->host.reset();
  mpi_check(MPI_Comm_free(&c->mpi), "MPI_Comm_free");
}

void abort_comm(std::unique_ptr<gjComm> c) noexcept {
  if (c->device) c->device->abort();
  if (c->host) c->host->abort();
  c->device.reset();
  c->host.reset();
  // c->mpi is deliberately leaked; see comm.h.
}

}  // namespace gj
