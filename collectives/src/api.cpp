// The C ABI: every entry point validates its arguments here, runs the work, and turns any
// exception into a result code plus a last-error message. Nothing thrown crosses this file.
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "agreement.h"
#include "comm.h"
#include "cuda/device.h"
#include "dtype.h"
#include "error.h"
#include "gj/collectives.h"
#include "grouped.h"
#include "mpi/mpi_check.h"
#include "registry.h"
#include "validate.h"

namespace {

using gj::Error;

thread_local std::string t_last_error;
// MPI was initialized by gjCommInitWorld, so gjFinalize finalizes it.
std::atomic<bool> g_we_initialized_mpi{false};

gjResult_t fail(const char* call, gjComm_t comm, gjResult_t code, const std::string& detail) {
  const std::string prefix = std::string(call) + ": ";
  t_last_error = detail.compare(0, prefix.size(), prefix) == 0 ? detail : prefix + detail;
  if (comm != nullptr && gj::registry::is_live(comm)) comm->last_error = t_last_error;
  return code;
}

// Runs body; exceptions become result codes.
template <class Body>
gjResult_t guarded(const char* call, gjComm_t comm, Body&& body) noexcept {
  try {
    body();
    return gjSuccess;
  } catch (const Error& e) {
    return fail(call, comm, e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return fail(call, comm, gjSystemError, "out of memory");
  } catch (const std::exception& e) {
    return fail(call, comm, gjInternalError, e.what());
  } catch (...) {
    return fail(call, comm, gjInternalError, "unknown exception");
  }
}

gjComm* live(const char* call, gjComm_t comm) {
  if (comm == nullptr) {
    throw Error(gjInvalidUsage, std::string(call) + ": comm=NULL; create one with gjCommInitWorld or gjCommInitMpi");
  }
  if (!gj::registry::is_live(comm)) {
    char address[32];
    std::snprintf(address, sizeof address, "%p", static_cast<void*>(comm));
    throw Error(gjInvalidUsage, std::string(call) + ": comm=" + address +
                                    " is not a live communicator (destroyed, aborted or never created)");
  }
  return comm;
}

void require_mpi_usable(const char* call) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) throw Error(gjInvalidUsage, std::string(call) + ": MPI is already finalized");
}

// True for device buffers. Every non-empty buffer of one call must be the same kind.
bool buffers_on_device(const char* call, const void* const* buffers, const char* const* names, int n) {
  int first = -1;
  bool device = false;
  for (int i = 0; i < n; ++i) {
    if (buffers[i] == nullptr) continue;
    const bool d = gj::cuda::is_device_pointer(buffers[i]);
    if (first < 0) {
      first = i;
      device = d;
    } else if (d != device) {
      throw Error(gjInvalidArgument, std::string(call) + ": " + names[first] + " is " +
                                         (device ? "device" : "host") + " memory but " + names[i] +
                                         " is " + (d ? "device" : "host") + " memory; use one kind");
    }
  }
  return device;
}

std::uint64_t fnv1a(const std::size_t* values, int n) {
  std::uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < n; ++i) {
    std::uint64_t v = values[i];
    for (int b = 0; b < 8; ++b) {
      h = (h ^ (v & 0xff)) * 1099511628211ull;
      v >>= 8;
    }
  }
  return h;
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

const char* gjGetErrorString(gjResult_t result) {
  switch (gj::enum_bits(result)) {
    case gjSuccess: return "success";
    case gjInvalidArgument: return "invalid argument";
    case gjInvalidUsage: return "invalid usage";
    case gjUnsupported: return "unsupported";
    case gjSystemError: return "system error";
    case gjMpiError: return "MPI error";
    case gjNcclError: return "NCCL error";
    case gjCudaError: return "CUDA error";
    case gjTimeout: return "timeout";
    case gjInternalError: return "internal error";
    default: return "unknown result code";
  }
}

const char* gjGetLastError(gjComm_t comm) {
  if (comm != nullptr && gj::registry::is_live(comm)) return comm->last_error.c_str();
  return t_last_error.c_str();
}

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
      gj::mpi_check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided),
                    "MPI_Init_thread(MPI_THREAD_FUNNELED)");
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
      throw Error(gjInvalidUsage, std::string(call) +
                                      ": MPI is not initialized; call MPI_Init first or use gjCommInitWorld");
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
    std::unique_ptr<gjComm> owned(live(call, comm));
    gj::registry::remove(comm);
    gj::destroy_comm(std::move(owned));
  });
}

gjResult_t gjCommAbort(gjComm_t comm) {
  static constexpr const char* call = "gjCommAbort";
  return guarded(call, comm, [&] {
    std::unique_ptr<gjComm> owned(live(call, comm));
    gj::registry::remove(comm);
    gj::abort_comm(std::move(owned));
  });
}

gjResult_t gjCommRank(gjComm_t comm, int* rank) {
  return comm_attribute("gjCommRank", comm, rank, &gjComm::rank);
}
gjResult_t gjCommSize(gjComm_t comm, int* size) {
  return comm_attribute("gjCommSize", comm, size, &gjComm::size);
}
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

gjResult_t gjAllReduce(const void* sendbuff, void* recvbuff, size_t count, gjDataType_t dtype,
                       gjRedOp_t op, gjComm_t comm, void* stream) {
  static constexpr const char* call = "gjAllReduce";
  return guarded(call, comm, [&] {
    gjComm* c = live(call, comm);
    gj::validate::dtype(call, gj::enum_bits(dtype));
    gj::validate::op(call, gj::enum_bits(op));
    gj::validate::bytes(call, "count", count, dtype);
    gj::validate::buffer(call, "sendbuff", sendbuff, count);
    gj::validate::buffer(call, "recvbuff", recvbuff, count);
    if (c->config.check) {
      gj::require_same_on_all_ranks(c->mpi, call, {{"count", count}, {"dtype", dtype}, {"op", op}});
    }
    if (count == 0) return;
    const void* buffers[] = {sendbuff, recvbuff};
    const char* names[] = {"sendbuff", "recvbuff"};
    c->backend_for(buffers_on_device(call, buffers, names, 2), call)
        .allreduce(sendbuff, recvbuff, count, dtype, op, stream);
  });
}

gjResult_t gjBroadcast(void* buff, size_t count, gjDataType_t dtype, int root, gjComm_t comm, void* stream) {
  static constexpr const char* call = "gjBroadcast";
  return guarded(call, comm, [&] {
    gjComm* c = live(call, comm);
    gj::validate::dtype(call, gj::enum_bits(dtype));
    gj::validate::bytes(call, "count", count, dtype);
    gj::validate::buffer(call, "buff", buff, count);
    gj::validate::root(call, root, c->size);
    if (c->config.check) {
      gj::require_same_on_all_ranks(
          c->mpi, call, {{"count", count}, {"dtype", dtype}, {"root", static_cast<std::uint64_t>(root)}});
    }
    if (count == 0) return;
    const void* buffers[] = {buff};
    const char* names[] = {"buff"};
    c->backend_for(buffers_on_device(call, buffers, names, 1), call).broadcast(buff, count, dtype, root, stream);
  });
}

gjResult_t gjGroupedAllReduce(const void* const* sendbuffs, void* const* recvbuffs, const size_t* counts,
                              int ntensors, gjDataType_t dtype, gjRedOp_t op, gjComm_t comm, void* stream) {
  static constexpr const char* call = "gjGroupedAllReduce";
  return guarded(call, comm, [&] {
    gjComm* c = live(call, comm);
    gj::validate::dtype(call, gj::enum_bits(dtype));
    gj::validate::op(call, gj::enum_bits(op));
    const std::size_t total = gj::validate::tensor_list(call, sendbuffs, recvbuffs, counts, ntensors, dtype);
    // Always checked: a fused buffer of different length on one rank would reduce wrong data.
    gj::require_same_on_all_ranks(c->mpi, call,
                                  {{"ntensors", static_cast<std::uint64_t>(ntensors)},
                                   {"total bytes", total},
                                   {"counts[] (hash)", fnv1a(counts, ntensors)},
                                   {"dtype", dtype},
                                   {"op", op}});
    if (total == 0) return;
    std::vector<const void*> buffers;
    std::vector<std::string> name_text;
    for (int i = 0; i < ntensors; ++i) {
      if (counts[i] == 0) continue;
      buffers.push_back(sendbuffs[i]);
      buffers.push_back(recvbuffs[i]);
      name_text.push_back("sendbuffs[" + std::to_string(i) + "]");
      name_text.push_back("recvbuffs[" + std::to_string(i) + "]");
    }
    std::vector<const char*> names;
    for (const std::string& n : name_text) names.push_back(n.c_str());
    const bool device = buffers_on_device(call, buffers.data(), names.data(), static_cast<int>(buffers.size()));
    gj::grouped_allreduce(c->backend_for(device, call), sendbuffs, recvbuffs, counts, ntensors, dtype, op,
                          c->fusion_threshold, stream);
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
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (g_we_initialized_mpi.exchange(false) && !finalized) gj::mpi_check(MPI_Finalize(), "MPI_Finalize");
  });
}

}  // extern "C"
