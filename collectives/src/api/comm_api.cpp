// Communicator lifecycle and attributes (NCCL's init.cc): creation over MPI, split, destroy
// and abort, the attribute getters and setters, gjFinalize, and what the build and the
// process can do (capabilities, the NCCL library found).
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "agreement.h"
#include "api/entry.h"
#include "comm.h"
#include "cuda/device.h"
#include "config.h"
#include "dtype.h"
#include "env.h"
#include "mpi_base/mpi_check.h"
#include "peer/monitor.h"
#include "registry.h"
#include "requests.h"
#include "validate.h"
#include "work.h"
#ifdef GJ_HAVE_NCCL
#include "nccl/nccl_backend.h"
#endif

namespace {

using gj::Error;
using gj::entry::guarded;
using gj::entry::live;

// MPI was initialized by gjCommInitWorld, so gjFinalize finalizes it.
std::atomic<bool> g_we_initialized_mpi{false};

void require_mpi_usable(const char* call) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) throw Error(gjInvalidUsage, std::string(call) + ": MPI is already finalized");
}

template <class T>
gjResult_t comm_attribute(const char* call, gjComm_t comm, T* out, T gjComm::*field) {
  return guarded(call, comm, [&] {
    gjComm* c = live(call, comm);
    gj::validate::out_pointer(call, "the result pointer", out);
    *out = c->*field;
  });
}

}  // namespace

extern "C" {

gjResult_t gjCommInitWorld(gjComm_t* comm) {
  static constexpr const char* call = "gjCommInitWorld";
  return guarded(call, nullptr, [&] {
    gj::validate::out_pointer(call, "comm", comm);
    *comm = nullptr;
    require_mpi_usable(call);
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      // MPI_THREAD_MULTIPLE: nonblocking host operations run on a progress thread.
      gj::mpi_check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided),
                    "MPI_Init_thread(MPI_THREAD_MULTIPLE)");
      g_we_initialized_mpi = true;
    }
    auto c = gj::create_comm(MPI_COMM_WORLD);
    gj::registry::add(c.get());
    *comm = c.release();
  });
}

gjResult_t gjCommInitMpi(gjComm_t* comm, const void* mpi_comm) {
  static constexpr const char* call = "gjCommInitMpi";
  return guarded(call, nullptr, [&] {
    gj::validate::out_pointer(call, "comm", comm);
    *comm = nullptr;
    gj::validate::out_pointer(call, "mpi_comm", mpi_comm);
    require_mpi_usable(call);
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      throw Error(gjInvalidUsage,
                  std::string(call) + ": MPI is not initialized; call MPI_Init first or use gjCommInitWorld");
    }
    const MPI_Comm parent = *static_cast<const MPI_Comm*>(mpi_comm);
    if (parent == MPI_COMM_NULL) {
      throw Error(gjInvalidArgument, std::string(call) + ": *mpi_comm is MPI_COMM_NULL");
    }
    auto c = gj::create_comm(parent);
    gj::registry::add(c.get());
    *comm = c.release();
  });
}

gjResult_t gjCommDestroy(gjComm_t comm) {
  static constexpr const char* call = "gjCommDestroy";
  return guarded(call, comm, [&] {
    std::unique_ptr<gjComm> owned = gj::entry::take(call, comm);
    owned->queue.reset();  // every queued request runs first
    gj::requests::settle(comm, true);
    gj::destroy_comm(std::move(owned));
  });
}

gjResult_t gjCommAbort(gjComm_t comm) {
  static constexpr const char* call = "gjCommAbort";
  return guarded(call, comm, [&] {
    std::unique_ptr<gjComm> owned = gj::entry::take(call, comm);
    if (owned->queue) owned->queue->abort();
    gj::requests::settle(comm, false);
    gj::abort_comm(std::move(owned));
  });
}

gjResult_t gjCommSplit(gjComm_t comm, int color, int key, gjComm_t* newcomm) {
  static constexpr const char* call = "gjCommSplit";
  return guarded(call, comm, [&] {
    gjComm* c = live(call, comm);
    gj::validate::out_pointer(call, "newcomm", newcomm);
    *newcomm = nullptr;
    gj::Work w;
    w.call = call;
    w.sig.kind = gj::Kind::Split;
    w.agree_first = c->runs_agreement_check(false);
    std::unique_ptr<gjComm> made;
    w.body = [&] {
      MPI_Comm split = MPI_COMM_NULL;
      gj::mpi_check(MPI_Comm_split(c->mpi, color < 0 ? MPI_UNDEFINED : color, key, &split),
                    std::string(call) + ": MPI_Comm_split(color=" + std::to_string(color) + ")");
      if (split == MPI_COMM_NULL) return;
      try {
        made = gj::create_comm(split, &c->config);
      } catch (...) {
        MPI_Comm_free(&split);
        throw;
      }
      MPI_Comm_free(&split);
    };
    c->queue->run_blocking(w);
    if (!made) return;
    made->fusion_threshold = c->fusion_threshold;
    made->agreement = c->agreement;
    gj::registry::add(made.get());
    *newcomm = made.release();
  });
}

gjResult_t gjCommRank(gjComm_t comm, int* rank) { return comm_attribute("gjCommRank", comm, rank, &gjComm::rank); }
gjResult_t gjCommSize(gjComm_t comm, int* size) { return comm_attribute("gjCommSize", comm, size, &gjComm::size); }
gjResult_t gjCommLocalRank(gjComm_t comm, int* local_rank) {
  return comm_attribute("gjCommLocalRank", comm, local_rank, &gjComm::local_rank);
}
gjResult_t gjCommLocalSize(gjComm_t comm, int* local_size) {
  return comm_attribute("gjCommLocalSize", comm, local_size, &gjComm::local_size);
}
gjResult_t gjCommGetFusionThreshold(gjComm_t comm, size_t* bytes) {
  return comm_attribute("gjCommGetFusionThreshold", comm, bytes, &gjComm::fusion_threshold);
}

gjResult_t gjCommBackend(gjComm_t comm, int is_device, gjBackend_t* backend) {
  static constexpr const char* call = "gjCommBackend";
  return guarded(call, comm, [&] {
    gjComm* c = live(call, comm);
    gj::validate::out_pointer(call, "backend", backend);
    *backend = gj::backend_for(c->plan, is_device != 0, call);
  });
}

gjResult_t gjCommSetFusionThreshold(gjComm_t comm, size_t bytes) {
  static constexpr const char* call = "gjCommSetFusionThreshold";
  return guarded(call, comm, [&] {
    gjComm* c = live(call, comm);
    if (bytes > static_cast<std::size_t>(PTRDIFF_MAX)) {
      throw Error(gjInvalidArgument, std::string(call) + ": bytes=" + std::to_string(bytes) +
                                         " exceeds PTRDIFF_MAX; was a negative value converted to size_t?");
    }
    c->fusion_threshold = bytes;
  });
}

gjResult_t gjCommSetCheck(gjComm_t comm, int enabled) {
  static constexpr const char* call = "gjCommSetCheck";
  return guarded(call, comm, [&] {
    live(call, comm)->agreement = enabled != 0 ? gjComm::AgreementScope::All : gjComm::AgreementScope::None;
  });
}

int gjBuildCapabilities(void) {
  int caps = 0;
#ifdef GJ_HAVE_CUDA
  caps |= gjCapCuda;
#endif
#ifdef GJ_HAVE_NCCL
  caps |= gjCapNccl;
#endif
  return caps;
}

gjResult_t gjNcclVersion(int* version) {
  static constexpr const char* call = "gjNcclVersion";
  return guarded(call, nullptr, [&] {
    gj::validate::out_pointer(call, "version", version);
    *version = 0;
#ifdef GJ_HAVE_NCCL
    std::string why;
    *version = gj::nccl_library_version(gj::parse_config(gj::snapshot_coll_env()), &why);
    if (*version == 0) throw Error(gjUnsupported, std::string(call) + ": " + why);
#else
    throw Error(gjUnsupported, std::string(call) + ": this build of the library has no NCCL backend "
                                                   "(configure with -DGJ_WITH_NCCL=ON)");
#endif
  });
}

gjResult_t gjCudaDevices(int* count) {
  static constexpr const char* call = "gjCudaDevices";
  return guarded(call, nullptr, [&] {
    gj::validate::out_pointer(call, "count", count);
    *count = gj::cuda::device_count();
    if (const std::string problem = gj::cuda::device_problem(); !problem.empty()) {
      throw Error(gjCudaError, std::string(call) + ": " + problem);
    }
  });
}

size_t gjDataTypeSize(gjDataType_t dtype) { return gj::valid_dtype(gj::enum_bits(dtype)) ? gj::dtype_size(dtype) : 0; }

gjResult_t gjFinalize(void) {
  static constexpr const char* call = "gjFinalize";
  return guarded(call, nullptr, [&] {
    const std::size_t alive = gj::registry::live_count();
    if (alive > 0) {
      throw Error(gjInvalidUsage, std::string(call) + ": " + std::to_string(alive) +
                                      " communicator(s) still alive; gjCommDestroy them first");
    }
    // A failing job: MPI_Finalize's fence would wait for ranks that never come.
    if (!gj::peer::finish()) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (g_we_initialized_mpi.exchange(false) && !finalized) gj::mpi_check(MPI_Finalize(), "MPI_Finalize");
  });
}

}  // extern "C"
