// The C ABI: every entry point validates its arguments here, runs the work, and turns any
// exception into a result code plus a last-error message. Nothing thrown crosses this file.
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "adasum/adasum_plan.h"
#include "adasum/host_adasum.h"
#include "agreement.h"
#include "alltoall/host_alltoall.h"
#include "comm.h"
#include "cuda/device.h"
#include "dtype.h"
#include "error.h"
#include "gj/collectives.h"
#include "grouped.h"
#include "mpi/mpi_check.h"
#include "peer/monitor.h"
#include "registry.h"
#include "requests.h"
#include "validate.h"
#include "work.h"

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

// The device of the call's device buffers, -1 for host buffers. Every non-empty buffer of one
// call must be the same kind.
int buffers_device(const char* call, const void* const* buffers, const char* const* names, int n) {
  int first = -1;
  bool device = false;
  int where = -1;
  for (int i = 0; i < n; ++i) {
    if (buffers[i] == nullptr) continue;
    const int on = gj::cuda::pointer_device(buffers[i]);
    const bool d = on >= 0;
    if (first < 0) {
      first = i;
      device = d;
      where = on;
    } else if (d != device) {
      throw Error(gjInvalidArgument, std::string(call) + ": " + names[first] + " is " +
                                         (device ? "device" : "host") + " memory but " + names[i] +
                                         " is " + (d ? "device" : "host") + " memory; use one kind");
    }
  }
  return where;
}

// The backend a call's buffers belong to, after checking every non-empty buffer is one kind.
struct Target {
  bool device;
  gj::Backend* backend;
};
Target target_of(gjComm* c, const char* call, const void* const* buffers, const char* const* names, int n) {
  const int device = buffers_device(call, buffers, names, n);
  return Target{device >= 0, &c->backend_for(device, call)};
}

// Runs body now (request == NULL) or as a request. Host work goes through the communicator's
// queue; device work is enqueued on the caller's stream from this thread (stream order),
// after every earlier host request, and its request completes with an event.
template <class Body>
void issue(gjComm* c, const Target& t, gj::Work w, Body&& body, gjRequest_t* request, void* stream) {
  if (request == nullptr) return c->queue->run_blocking(w, body);
  if (!t.device) {
    w.body = std::forward<Body>(body);
    *request = gj::requests::make_host(c, c->queue->submit(std::move(w)));
    return;
  }
  if (!t.backend->has_completions()) {
    throw Error(gjUnsupported, std::string(w.call) +
                                   ": nonblocking operations on device buffers need completion events, which this "
                                   "build's device backend does not record; use the blocking call (stream-ordered)");
  }
  t.backend->check_completion_stream(stream);
  c->queue->run_blocking(w, body);
  *request = gj::requests::make_polled(c, *t.backend, t.backend->record_completion(stream));
}

// A C caller's out-of-range enum must not be loaded as the C++ enum (undefined behaviour):
// the entry points check the raw bits before passing dtype/op on by value.
void check_enums(const char* call, const gjDataType_t& dtype) { gj::validate::dtype(call, gj::enum_bits(dtype)); }
void check_enums(const char* call, const gjDataType_t& dtype, const gjRedOp_t& op) {
  gj::validate::dtype(call, gj::enum_bits(dtype));
  gj::validate::op(call, gj::enum_bits(op));
}

void prepare_request(const char* call, gjRequest_t* request) {
  gj::validate::out_pointer(call, "request", request);
  *request = nullptr;
}

// The frame of every collective entry point, in the order a caller's errors are found:
// exceptions become the result; a C caller's enums are checked (check_enums), then a
// nonblocking call's request out-pointer (validated and cleared), then the communicator.
// run(c, request) issues the operation; request is nullptr for a blocking call.
template <class Run, class... Enums>
gjResult_t collective(const char* call, gjComm_t comm, bool nonblocking, gjRequest_t* request, Run&& run,
                      const Enums&... enums) {
  return guarded(call, comm, [&] {
    if constexpr (sizeof...(Enums) > 0) check_enums(call, enums...);
    if (nonblocking) prepare_request(call, request);
    run(live(call, comm), nonblocking ? request : nullptr);
  });
}
template <class Run, class... Enums>
gjResult_t blocking_call(const char* call, gjComm_t comm, Run&& run, const Enums&... enums) {
  return collective(call, comm, false, nullptr, std::forward<Run>(run), enums...);
}
template <class Run, class... Enums>
gjResult_t nonblocking_call(const char* call, gjComm_t comm, gjRequest_t* request, Run&& run,
                            const Enums&... enums) {
  return collective(call, comm, true, request, std::forward<Run>(run), enums...);
}

// The work item of one call: what the agreement check compares across ranks (kind, element
// count, dtype; the caller adds what else identifies the operation), checked when
// GJ_COLL_CHECK asks.
gj::Work work_for(const char* call, const gjComm* c, gj::Kind kind, std::uint64_t count, gjDataType_t dtype) {
  gj::Work w;
  w.call = call;
  w.sig.kind = kind;
  w.sig.count = count;
  w.sig.dtype = static_cast<std::uint64_t>(dtype);
  w.agree_first = c->runs_agreement_check(false);
  return w;
}

// A reduction's work item: also its op and scale factors.
gj::Work reduction_work(const char* call, const gjComm* c, gj::Kind kind, std::uint64_t count, gjDataType_t dtype,
                        gjRedOp_t op, gj::Scale scale) {
  gj::Work w = work_for(call, c, kind, count, dtype);
  w.sig.op = static_cast<std::uint64_t>(op);
  w.sig.scale = gj::hash_scale(scale.pre, scale.post);
  return w;
}

// What every reduction checks first: dtype and op in range, the dtype reducible, the factors.
void validate_reduction(const char* call, gjDataType_t dtype, gjRedOp_t op, gj::Scale scale) {
  gj::validate::dtype(call, gj::enum_bits(dtype));
  gj::validate::op(call, gj::enum_bits(op));
  gj::validate::reducible(call, dtype);
  gj::validate::scale(call, scale.pre, scale.post);
}

void allreduce(const char* call, gjComm* c, const void* sendbuff, void* recvbuff, std::size_t count,
               gjDataType_t dtype, gjRedOp_t op, gj::Scale scale, void* stream, gjRequest_t* request) {
  validate_reduction(call, dtype, op, scale);
  gj::validate::bytes(call, "count", count, dtype);
  gj::validate::buffer(call, "sendbuff", sendbuff, count);
  gj::validate::buffer(call, "recvbuff", recvbuff, count);
  const void* buffers[] = {sendbuff, recvbuff};
  const char* names[] = {"sendbuff", "recvbuff"};
  const Target t = target_of(c, call, buffers, names, 2);
  gj::Work w = reduction_work(call, c, gj::Kind::AllReduce, count, dtype, op, scale);
  gj::Backend* b = t.backend;
  auto body = [=] {
    if (count > 0) b->allreduce_scaled(sendbuff, recvbuff, count, dtype, op, scale, stream);
  };
  if (!t.device && request != nullptr) {
    w.fuse = gj::Work::Fusible{sendbuff, recvbuff, count, dtype, op, scale, c->fusion_threshold};
  }
  issue(c, t, std::move(w), std::move(body), request, stream);
}

void grouped(const char* call, gjComm* c, const void* const* sendbuffs, void* const* recvbuffs,
             const std::size_t* counts, int ntensors, gjDataType_t dtype, gjRedOp_t op, gj::Scale scale,
             void* stream, gjRequest_t* request) {
  validate_reduction(call, dtype, op, scale);
  const std::size_t total = gj::validate::tensor_list(call, sendbuffs, recvbuffs, counts, ntensors, dtype);
  std::vector<const void*> sends, buffers;
  std::vector<void*> recvs;
  std::vector<std::size_t> n;
  std::vector<std::string> names;
  for (int i = 0; i < ntensors; ++i) {
    sends.push_back(sendbuffs[i]);
    recvs.push_back(recvbuffs[i]);
    n.push_back(counts[i]);
    if (counts[i] == 0) continue;
    buffers.push_back(sendbuffs[i]);
    buffers.push_back(recvbuffs[i]);
    names.push_back("sendbuffs[" + std::to_string(i) + "]");
    names.push_back("recvbuffs[" + std::to_string(i) + "]");
  }
  std::vector<const char*> name_ptrs;
  for (const std::string& nm : names) name_ptrs.push_back(nm.c_str());
  const Target t = target_of(c, call, buffers.data(), name_ptrs.data(), static_cast<int>(buffers.size()));
  gj::Work w = reduction_work(call, c, gj::Kind::GroupedAllReduce, total / gj::dtype_size(dtype), dtype, op, scale);
  w.sig.ntensors = static_cast<std::uint64_t>(ntensors);
  w.sig.counts_hash = gj::hash_counts(counts, ntensors);
  w.agree_first = c->runs_agreement_check(true);
  gj::Backend* b = t.backend;
  const std::size_t threshold = c->fusion_threshold;
  auto body = [=, sends = std::move(sends), recvs = std::move(recvs), n = std::move(n)] {
    if (total == 0) return;
    gj::grouped_allreduce(*b, sends.data(), recvs.data(), n.data(), ntensors, dtype, op, scale, threshold, stream);
  };
  issue(c, t, std::move(w), std::move(body), request, stream);
}

void broadcast(const char* call, gjComm* c, void* buff, std::size_t count, gjDataType_t dtype, int root,
               void* stream, gjRequest_t* request) {
  gj::validate::dtype(call, gj::enum_bits(dtype));
  gj::validate::bytes(call, "count", count, dtype);
  gj::validate::buffer(call, "buff", buff, count);
  gj::validate::root(call, root, c->size);
  const void* buffers[] = {buff};
  const char* names[] = {"buff"};
  const Target t = target_of(c, call, buffers, names, 1);
  gj::Work w = work_for(call, c, gj::Kind::Broadcast, count, dtype);
  w.sig.root = static_cast<std::uint64_t>(root);
  gj::Backend* b = t.backend;
  auto body = [=] {
    if (count > 0) b->broadcast(buff, count, dtype, root, stream);
  };
  issue(c, t, std::move(w), std::move(body), request, stream);
}

void allgatherv(const char* call, gjComm* c, const void* sendbuff, void* recvbuff, std::vector<std::size_t> counts,
                gjDataType_t dtype, void* stream, gjRequest_t* request) {
  const std::size_t total = gj::validate::rank_counts(call, "recvcounts", counts.data(), c->size, dtype);
  const std::size_t mine = counts[static_cast<std::size_t>(c->rank)];
  gj::validate::buffer(call, "sendbuff", sendbuff, mine);
  gj::validate::buffer(call, "recvbuff", recvbuff, total);
  const void* buffers[] = {mine > 0 ? sendbuff : nullptr, recvbuff};
  const char* names[] = {"sendbuff", "recvbuff"};
  const Target t = target_of(c, call, buffers, names, 2);
  gj::Work w = work_for(call, c, gj::Kind::AllGather, total, dtype);
  if (w.agree_first) w.sig.counts_hash = gj::hash_counts(counts.data(), c->size);
  gj::Backend* b = t.backend;
  auto body = [=, counts = std::move(counts)] {
    if (total > 0) b->allgatherv(sendbuff, recvbuff, counts.data(), dtype, stream);
  };
  issue(c, t, std::move(w), std::move(body), request, stream);
}

void allgather(const char* call, gjComm* c, const void* sendbuff, void* recvbuff, std::size_t sendcount,
               gjDataType_t dtype, void* stream, gjRequest_t* request) {
  gj::validate::dtype(call, gj::enum_bits(dtype));
  gj::validate::bytes(call, "sendcount", sendcount, dtype);
  allgatherv(call, c, sendbuff, recvbuff, std::vector<std::size_t>(static_cast<std::size_t>(c->size), sendcount),
             dtype, stream, request);
}

void allgatherv_checked(const char* call, gjComm* c, const void* sendbuff, void* recvbuff,
                        const std::size_t* recvcounts, gjDataType_t dtype, void* stream, gjRequest_t* request) {
  gj::validate::dtype(call, gj::enum_bits(dtype));
  gj::validate::rank_counts(call, "recvcounts", recvcounts, c->size, dtype);
  allgatherv(call, c, sendbuff, recvbuff, std::vector<std::size_t>(recvcounts, recvcounts + c->size), dtype, stream,
             request);
}

// An allgather whose receive side is planned when it runs: host buffers only (the plan runs on
// the progress thread, which enqueues nothing on a caller's stream).
void allgatherv_late(const char* call, gjComm* c, const void* sendbuff, std::size_t sendcount, gjDataType_t dtype,
                     gjRecvPlan_t plan, void* arg, gjRequest_t* request) {
  gj::validate::dtype(call, gj::enum_bits(dtype));
  gj::validate::bytes(call, "sendcount", sendcount, dtype);
  gj::validate::buffer(call, "sendbuff", sendbuff, sendcount);
  if (plan == nullptr) throw Error(gjInvalidArgument, std::string(call) + ": plan=NULL");
  const void* buffers[] = {sendcount > 0 ? sendbuff : nullptr};
  const char* names[] = {"sendbuff"};
  const Target t = target_of(c, call, buffers, names, 1);
  if (t.device) {
    throw Error(gjUnsupported, std::string(call) + ": sendbuff is device memory; the receive plan runs on the "
                                                   "progress thread, for host buffers only (use gjIallGatherV)");
  }
  gj::Work w = work_for(call, c, gj::Kind::AllGather, 0, dtype);  // the counts are the plan's
  gj::Backend* b = t.backend;
  const int rank = c->rank;
  const auto size = static_cast<std::size_t>(c->size);
  w.body = [=] {
    std::vector<std::size_t> counts(size, 0);
    void* recvbuff = nullptr;
    if (plan(arg, counts.data(), &recvbuff) != 0) return;  // skipped on every rank
    if (counts[static_cast<std::size_t>(rank)] != sendcount) {
      throw Error(gjInvalidArgument, std::string(call) + ": the receive plan gives this rank (" +
                                         std::to_string(rank) + ") " +
                                         std::to_string(counts[static_cast<std::size_t>(rank)]) +
                                         " elements but sendcount=" + std::to_string(sendcount));
    }
    std::size_t total = 0;
    for (std::size_t n : counts) total += n;
    gj::validate::buffer(call, "the plan's recvbuff", recvbuff, total);
    if (total > 0) b->allgatherv(sendbuff, recvbuff, counts.data(), dtype, nullptr);
  };
  *request = gj::requests::make_host(c, c->queue->submit(std::move(w)));
}

void reduce_scatter(const char* call, gjComm* c, const void* sendbuff, void* recvbuff, const std::size_t* recvcounts,
                    gjDataType_t dtype, gjRedOp_t op, gj::Scale scale, void* stream, gjRequest_t* request) {
  validate_reduction(call, dtype, op, scale);
  const std::size_t total = gj::validate::rank_counts(call, "recvcounts", recvcounts, c->size, dtype);
  std::vector<std::size_t> counts(recvcounts, recvcounts + c->size);
  const std::size_t mine = counts[static_cast<std::size_t>(c->rank)];
  gj::validate::buffer(call, "sendbuff", sendbuff, total);
  gj::validate::buffer(call, "recvbuff", recvbuff, mine);
  const void* buffers[] = {sendbuff, mine > 0 ? recvbuff : nullptr};
  const char* names[] = {"sendbuff", "recvbuff"};
  const Target t = target_of(c, call, buffers, names, 2);
  gj::Work w = reduction_work(call, c, gj::Kind::ReduceScatter, total, dtype, op, scale);
  if (w.agree_first) w.sig.counts_hash = gj::hash_counts(counts.data(), c->size);
  gj::Backend* b = t.backend;
  auto body = [=, counts = std::move(counts)] {
    if (total > 0) b->reduce_scatter(sendbuff, recvbuff, counts.data(), dtype, op, scale, stream);
  };
  issue(c, t, std::move(w), std::move(body), request, stream);
}

void alltoallv(const char* call, gjComm* c, const void* sendbuff, const std::size_t* sendcounts, void* recvbuff,
               const std::size_t* recvcounts, gjDataType_t dtype, void* stream, gjRequest_t* request) {
  gj::validate::dtype(call, gj::enum_bits(dtype));
  const std::size_t out = gj::validate::rank_counts(call, "sendcounts", sendcounts, c->size, dtype);
  const std::size_t in = gj::validate::rank_counts(call, "recvcounts", recvcounts, c->size, dtype);
  gj::validate::buffer(call, "sendbuff", sendbuff, out);
  gj::validate::buffer(call, "recvbuff", recvbuff, in);
  if (out > 0 && in > 0 && static_cast<const void*>(recvbuff) == sendbuff) {
    throw Error(gjInvalidArgument, std::string(call) + ": sendbuff == recvbuff; alltoall is not in place, pass a "
                                                           "separate receive buffer");
  }
  const void* buffers[] = {out > 0 ? sendbuff : nullptr, in > 0 ? recvbuff : nullptr};
  const char* names[] = {"sendbuff", "recvbuff"};
  const Target t = target_of(c, call, buffers, names, 2);
  // Counts differ per rank: the record agrees on the kind and dtype, and the body checks each
  // pair's counts (recvcounts[q] here == rank q's sendcounts for this rank) when checking.
  gj::Work w = work_for(call, c, gj::Kind::AllToAll, 0, dtype);
  const bool pairs = w.agree_first;
  gj::Backend* b = t.backend;
  const MPI_Comm mpi = c->mpi;
  std::vector<std::size_t> sc(sendcounts, sendcounts + c->size), rc(recvcounts, recvcounts + c->size);
  auto body = [=, sc = std::move(sc), rc = std::move(rc)] {
    if (pairs) gj::alltoall::require_matching_counts(mpi, call, sc.data(), rc.data());
    b->alltoallv(sendbuff, sc.data(), recvbuff, rc.data(), dtype, stream);
  };
  issue(c, t, std::move(w), std::move(body), request, stream);
}

void adasum(const char* call, gjComm* c, const void* sendbuff, void* recvbuff, std::size_t count, gjDataType_t dtype,
            gjRequest_t* request) {
  gj::validate::dtype(call, gj::enum_bits(dtype));
  if (!gj::is_floating(dtype)) {
    throw Error(gjUnsupported, std::string(call) + ": dtype=" + gj::dtype_name(dtype) +
                                   " cannot be combined by Adasum; it takes f32, f64, f16 or bf16");
  }
  gj::validate::bytes(call, "count", count, dtype);
  gj::validate::buffer(call, "sendbuff", sendbuff, count);
  gj::validate::buffer(call, "recvbuff", recvbuff, count);
  if (!gj::adasum::power_of_two(c->size)) {
    throw Error(gjUnsupported, std::string(call) + ": the communicator has " + std::to_string(c->size) +
                                   " ranks; Adasum runs on a power of two (as Horovod's), use 1, 2, 4, 8, ... ranks");
  }
  const void* buffers[] = {sendbuff, recvbuff};
  const char* names[] = {"sendbuff", "recvbuff"};
  if (buffers_device(call, buffers, names, 2) >= 0) {
    throw Error(gjUnsupported, std::string(call) + ": device buffers are not combined on the device; copy them to "
                                                       "host memory first (gj.torch stages CUDA tensors that way)");
  }
  gj::Work w = work_for(call, c, gj::Kind::Adasum, count, dtype);
  const MPI_Comm mpi = c->mpi;
  auto body = [=] { gj::adasum::host_adasum(mpi, sendbuff, recvbuff, count, dtype); };
  issue(c, Target{false, c->host.get()}, std::move(w), std::move(body), request, nullptr);
}

void barrier(const char* call, gjComm* c, gjRequest_t* request) {
  gj::Work w;
  w.call = call;
  w.sig.kind = gj::Kind::Barrier;
  w.agree_first = c->runs_agreement_check(false);
  const MPI_Comm mpi = c->mpi;
  auto body = [=] { gj::mpi_check(MPI_Barrier(mpi), std::string(call) + ": MPI_Barrier"); };
  issue(c, Target{false, c->host.get()}, std::move(w), std::move(body), request, nullptr);
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
    case gjPeerLost: return "peer lost";
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
    owned->queue.reset();  // every queued request runs first
    gj::requests::settle(comm, true);
    gj::destroy_comm(std::move(owned));
  });
}

gjResult_t gjCommAbort(gjComm_t comm) {
  static constexpr const char* call = "gjCommAbort";
  return guarded(call, comm, [&] {
    std::unique_ptr<gjComm> owned(live(call, comm));
    gj::registry::remove(comm);
    if (owned->queue) owned->queue->abort();
    gj::requests::settle(comm, false);
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
  return blocking_call(call, comm, [&](gjComm* c, gjRequest_t* r) {
    allreduce(call, c, sendbuff, recvbuff, count, dtype, op, gj::Scale{}, stream, r);
  }, dtype, op);
}

gjResult_t gjAllReduceScaled(const void* sendbuff, void* recvbuff, size_t count, gjDataType_t dtype,
                             gjRedOp_t op, double prescale, double postscale, gjComm_t comm, void* stream) {
  static constexpr const char* call = "gjAllReduceScaled";
  return blocking_call(call, comm, [&](gjComm* c, gjRequest_t* r) {
    allreduce(call, c, sendbuff, recvbuff, count, dtype, op, gj::Scale{prescale, postscale}, stream, r);
  }, dtype, op);
}

gjResult_t gjIallReduce(const void* sendbuff, void* recvbuff, size_t count, gjDataType_t dtype, gjRedOp_t op,
                        double prescale, double postscale, gjComm_t comm, void* stream, gjRequest_t* request) {
  static constexpr const char* call = "gjIallReduce";
  return nonblocking_call(call, comm, request, [&](gjComm* c, gjRequest_t* r) {
    allreduce(call, c, sendbuff, recvbuff, count, dtype, op, gj::Scale{prescale, postscale}, stream, r);
  }, dtype, op);
}

gjResult_t gjBroadcast(void* buff, size_t count, gjDataType_t dtype, int root, gjComm_t comm, void* stream) {
  static constexpr const char* call = "gjBroadcast";
  return blocking_call(call, comm, [&](gjComm* c, gjRequest_t* r) {
    broadcast(call, c, buff, count, dtype, root, stream, r);
  }, dtype);
}

gjResult_t gjIbroadcast(void* buff, size_t count, gjDataType_t dtype, int root, gjComm_t comm, void* stream,
                        gjRequest_t* request) {
  static constexpr const char* call = "gjIbroadcast";
  return nonblocking_call(call, comm, request, [&](gjComm* c, gjRequest_t* r) {
    broadcast(call, c, buff, count, dtype, root, stream, r);
  }, dtype);
}

gjResult_t gjGroupedAllReduce(const void* const* sendbuffs, void* const* recvbuffs, const size_t* counts,
                              int ntensors, gjDataType_t dtype, gjRedOp_t op, gjComm_t comm, void* stream) {
  static constexpr const char* call = "gjGroupedAllReduce";
  return blocking_call(call, comm, [&](gjComm* c, gjRequest_t* r) {
    grouped(call, c, sendbuffs, recvbuffs, counts, ntensors, dtype, op, gj::Scale{}, stream, r);
  }, dtype, op);
}

gjResult_t gjGroupedAllReduceScaled(const void* const* sendbuffs, void* const* recvbuffs, const size_t* counts,
                                    int ntensors, gjDataType_t dtype, gjRedOp_t op, double prescale,
                                    double postscale, gjComm_t comm, void* stream) {
  static constexpr const char* call = "gjGroupedAllReduceScaled";
  return blocking_call(call, comm, [&](gjComm* c, gjRequest_t* r) {
    grouped(call, c, sendbuffs, recvbuffs, counts, ntensors, dtype, op, gj::Scale{prescale, postscale}, stream, r);
  }, dtype, op);
}

gjResult_t gjIgroupedAllReduce(const void* const* sendbuffs, void* const* recvbuffs, const size_t* counts,
                               int ntensors, gjDataType_t dtype, gjRedOp_t op, double prescale, double postscale,
                               gjComm_t comm, void* stream, gjRequest_t* request) {
  static constexpr const char* call = "gjIgroupedAllReduce";
  return nonblocking_call(call, comm, request, [&](gjComm* c, gjRequest_t* r) {
    grouped(call, c, sendbuffs, recvbuffs, counts, ntensors, dtype, op, gj::Scale{prescale, postscale}, stream, r);
  }, dtype, op);
}

gjResult_t gjAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, gjDataType_t dtype, gjComm_t comm,
                       void* stream) {
  static constexpr const char* call = "gjAllGather";
  return blocking_call(call, comm, [&](gjComm* c, gjRequest_t* r) {
    allgather(call, c, sendbuff, recvbuff, sendcount, dtype, stream, r);
  }, dtype);
}

gjResult_t gjIallGather(const void* sendbuff, void* recvbuff, size_t sendcount, gjDataType_t dtype, gjComm_t comm,
                        void* stream, gjRequest_t* request) {
  static constexpr const char* call = "gjIallGather";
  return nonblocking_call(call, comm, request, [&](gjComm* c, gjRequest_t* r) {
    allgather(call, c, sendbuff, recvbuff, sendcount, dtype, stream, r);
  }, dtype);
}

gjResult_t gjAllGatherV(const void* sendbuff, void* recvbuff, const size_t* recvcounts, gjDataType_t dtype,
                        gjComm_t comm, void* stream) {
  static constexpr const char* call = "gjAllGatherV";
  return blocking_call(call, comm, [&](gjComm* c, gjRequest_t* r) {
    allgatherv_checked(call, c, sendbuff, recvbuff, recvcounts, dtype, stream, r);
  }, dtype);
}

gjResult_t gjIallGatherV(const void* sendbuff, void* recvbuff, const size_t* recvcounts, gjDataType_t dtype,
                         gjComm_t comm, void* stream, gjRequest_t* request) {
  static constexpr const char* call = "gjIallGatherV";
  return nonblocking_call(call, comm, request, [&](gjComm* c, gjRequest_t* r) {
    allgatherv_checked(call, c, sendbuff, recvbuff, recvcounts, dtype, stream, r);
  }, dtype);
}

gjResult_t gjReduceScatter(const void* sendbuff, void* recvbuff, const size_t* recvcounts, gjDataType_t dtype,
                           gjRedOp_t op, double prescale, double postscale, gjComm_t comm, void* stream) {
  static constexpr const char* call = "gjReduceScatter";
  return blocking_call(call, comm, [&](gjComm* c, gjRequest_t* r) {
    reduce_scatter(call, c, sendbuff, recvbuff, recvcounts, dtype, op, gj::Scale{prescale, postscale}, stream, r);
  }, dtype, op);
}

gjResult_t gjIreduceScatter(const void* sendbuff, void* recvbuff, const size_t* recvcounts, gjDataType_t dtype,
                            gjRedOp_t op, double prescale, double postscale, gjComm_t comm, void* stream,
                            gjRequest_t* request) {
  static constexpr const char* call = "gjIreduceScatter";
  return nonblocking_call(call, comm, request, [&](gjComm* c, gjRequest_t* r) {
    reduce_scatter(call, c, sendbuff, recvbuff, recvcounts, dtype, op, gj::Scale{prescale, postscale}, stream, r);
  }, dtype, op);
}

gjResult_t gjAllToAllV(const void* sendbuff, const size_t* sendcounts, void* recvbuff, const size_t* recvcounts,
                       gjDataType_t dtype, gjComm_t comm, void* stream) {
  static constexpr const char* call = "gjAllToAllV";
  return blocking_call(call, comm, [&](gjComm* c, gjRequest_t* r) {
    alltoallv(call, c, sendbuff, sendcounts, recvbuff, recvcounts, dtype, stream, r);
  }, dtype);
}

gjResult_t gjIallToAllV(const void* sendbuff, const size_t* sendcounts, void* recvbuff, const size_t* recvcounts,
                        gjDataType_t dtype, gjComm_t comm, void* stream, gjRequest_t* request) {
  static constexpr const char* call = "gjIallToAllV";
  return nonblocking_call(call, comm, request, [&](gjComm* c, gjRequest_t* r) {
    alltoallv(call, c, sendbuff, sendcounts, recvbuff, recvcounts, dtype, stream, r);
  }, dtype);
}

gjResult_t gjAllReduceAdasum(const void* sendbuff, void* recvbuff, size_t count, gjDataType_t dtype, gjComm_t comm) {
  static constexpr const char* call = "gjAllReduceAdasum";
  return blocking_call(call, comm, [&](gjComm* c, gjRequest_t* r) {
    adasum(call, c, sendbuff, recvbuff, count, dtype, r);
  }, dtype);
}

gjResult_t gjIallReduceAdasum(const void* sendbuff, void* recvbuff, size_t count, gjDataType_t dtype, gjComm_t comm,
                              gjRequest_t* request) {
  static constexpr const char* call = "gjIallReduceAdasum";
  return nonblocking_call(call, comm, request, [&](gjComm* c, gjRequest_t* r) {
    adasum(call, c, sendbuff, recvbuff, count, dtype, r);
  }, dtype);
}

gjResult_t gjBarrier(gjComm_t comm) {
  static constexpr const char* call = "gjBarrier";
  return blocking_call(call, comm, [&](gjComm* c, gjRequest_t* r) {
    barrier(call, c, r);
  });
}

gjResult_t gjIbarrier(gjComm_t comm, gjRequest_t* request) {
  static constexpr const char* call = "gjIbarrier";
  return nonblocking_call(call, comm, request, [&](gjComm* c, gjRequest_t* r) {
    barrier(call, c, r);
  });
}

gjResult_t gjIallGatherVLate(const void* sendbuff, size_t sendcount, gjDataType_t dtype, gjRecvPlan_t plan,
                             void* arg, gjComm_t comm, gjRequest_t* request) {
  static constexpr const char* call = "gjIallGatherVLate";
  return nonblocking_call(call, comm, request, [&](gjComm* c, gjRequest_t* r) {
    allgatherv_late(call, c, sendbuff, sendcount, dtype, plan, arg, r);
  }, dtype);
}

gjResult_t gjIcontrolMax(int64_t* values, size_t count, gjComm_t comm, gjRequest_t* request) {
  static constexpr const char* call = "gjIcontrolMax";
  return guarded(call, comm, [&] {
    gjComm* c = live(call, comm);
    gj::validate::out_pointer(call, "request", request);
    *request = nullptr;
    constexpr std::size_t kMaxCount = std::size_t{1} << 20;
    if (count == 0 || count > kMaxCount) {
      throw Error(gjInvalidArgument, std::string(call) + ": count=" + std::to_string(count) +
                                         " is out of range; pass 1 to " + std::to_string(kMaxCount) + " values");
    }
    if (values == nullptr) throw Error(gjInvalidArgument, std::string(call) + ": values=NULL with count=" +
                                                              std::to_string(count));
    if (c->thread_level < MPI_THREAD_MULTIPLE) {
      throw Error(gjInvalidUsage, std::string(call) + ": the control channel is polled while the progress thread "
                                                      "runs MPI, which needs MPI initialized with "
                                                      "MPI_THREAD_MULTIPLE; call MPI_Init_thread with "
                                                      "MPI_THREAD_MULTIPLE, or let gjCommInitWorld initialize MPI");
    }
    *request = gj::requests::make_polled(c, *c->control, c->control->start_max(call, values, count));
  });
}

gjResult_t gjTest(gjRequest_t request, int* done) {
  static constexpr const char* call = "gjTest";
  gjComm_t comm = nullptr;
  return guarded(call, nullptr, [&] {
    gj::validate::out_pointer(call, "done", done);
    *done = 0;
    comm = gj::requests::comm_of(call, request);
    gjResult_t code = gjSuccess;
    std::string message;
    if (!gj::requests::test(call, request, &code, &message)) return;
    *done = 1;
    if (code != gjSuccess) {
      if (comm != nullptr && gj::registry::is_live(comm)) comm->last_error = std::string(call) + ": " + message;
      throw Error(code, message);
    }
  });
}

gjResult_t gjWait(gjRequest_t request) {
  static constexpr const char* call = "gjWait";
  return guarded(call, nullptr, [&] {
    gjComm_t comm = gj::requests::comm_of(call, request);
    std::string message;
    const gjResult_t code = gj::requests::wait(call, request, &message);
    if (code != gjSuccess) {
      if (comm != nullptr && gj::registry::is_live(comm)) comm->last_error = std::string(call) + ": " + message;
      throw Error(code, message);
    }
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
