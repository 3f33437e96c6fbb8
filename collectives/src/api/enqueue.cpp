// enqueue(): the frame of every collective entry point (NCCL's ncclEnqueueCheck). Checks the
// communicator and the Op (op_check.cpp), finds the backend its buffers belong to, builds the
// Work (its agreement record) whose body calls that backend's method, and issues it: now, or
// as a request.
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "adasum/host_adasum.h"
#include "agreement.h"
#include "alltoall/host_alltoall.h"
#include "api/entry.h"
#include "api/op.h"
#include "comm.h"
#include "cuda/device.h"
#include "cuda/stream_mark.h"
#include "dtype.h"
#include "grouped.h"
#include "mpi_base/mpi_check.h"
#include "peer/progress.h"
#include "requests.h"
#include "validate.h"
#include "work.h"

namespace gj {
namespace {

// The device of the call's device buffers, -1 for host buffers. Every non-empty buffer of one
// call must be the same kind.
int buffers_device(const char* call, const void* const* buffers, const char* const* names, int n) {
  int first = -1;
  bool device = false;
  int where = -1;
  for (int i = 0; i < n; ++i) {
    if (buffers[i] == nullptr) continue;
    const int on = cuda::pointer_device(buffers[i]);
    const bool d = on >= 0;
    if (first < 0) {
      first = i;
      device = d;
      where = on;
    } else if (d != device) {
      throw Error(gjInvalidArgument, std::string(call) + ": " + names[first] + " is " + (device ? "device" : "host") +
                                         " memory but " + names[i] + " is " + (d ? "device" : "host") +
                                         " memory; use one kind");
    }
  }
  return where;
}

// The backend a call's buffers belong to, after checking every non-empty buffer is one kind.
// backend == nullptr for device buffers: the device backend is picked where the call runs in
// the queue's order (gjComm::backend_in_queue; the first device call creates the NCCL
// communicator there, on every rank in the same call), never from the caller's thread while an
// earlier queued call may be creating it.
struct Target {
  bool device;
  int index;  // the device of the buffers, -1 for host buffers
  Backend* backend;
};

// A nonblocking call on device buffers waits for no peer: its agreement check, the NCCL
// communicator's creation and its place behind earlier requests are the progress thread's, which
// needs MPI_THREAD_MULTIPLE (else the call runs at once, as before: stream-ordered on the
// caller's stream, after every earlier request).
bool defer_device(const gjComm* c, gjRequest_t* request) {
  return request != nullptr && c->thread_level >= MPI_THREAD_MULTIPLE;
}

Target device_or_host(gjComm* c, const char* call, int device) {
  if (device < 0) return Target{false, -1, &c->backend_for(-1, call)};
  c->refuse_device_buffers_if_decided(call);  // known already: refused before any queueing
  return Target{true, device, nullptr};
}

Target target_of(gjComm* c, const char* call, const void* const* buffers, const char* const* names, int n) {
  return device_or_host(c, call, buffers_device(call, buffers, names, n));
}

// The collective's bytes for the progress counters: its elements times their size (the
// agreement record's count; 0 for calls whose counts differ per rank).
std::uint64_t bytes_of(const Work& w) {
  if (w.sig.kind == Kind::Barrier || w.sig.dtype >= static_cast<std::uint64_t>(gjNumDataTypes)) return 0;
  return w.sig.count * dtype_size(static_cast<gjDataType_t>(w.sig.dtype));
}

// Counts a call into its communicator's progress now and out at the end of the scope, unless
// queued() hands the counting out to the host queue.
class Entered {
 public:
  Entered(gjComm* c, const Work& w) : progress_(c->progress.get()) {
    if (progress_ != nullptr) progress_->enter(w.call, bytes_of(w));
  }
  ~Entered() {
    if (progress_ != nullptr) progress_->complete();
  }
  void queued() { progress_ = nullptr; }
  Entered(const Entered&) = delete;
  Entered& operator=(const Entered&) = delete;

 private:
  peer::Progress* progress_;
};

// A deferred device request: the caller's stream is marked now (the producer's kernels queued
// so far); the progress thread later makes the backend's own stream wait for the mark, enqueues
// the work there and records the completion event the request then waits for. The caller's
// later kernels do not queue behind the communication; its buffers belong to the request until
// gjWait/gjTest completes it (as with MPI's nonblocking calls).
template <class Body>
void issue_deferred(gjComm* c, const Target& t, Work w, Body&& body, gjRequest_t* request, void* stream) {
  auto mark = std::make_shared<const cuda::StreamMark>(t.index, stream, w.call);
  auto tail = std::make_shared<requests::DeviceTail>();
  const char* call = w.call;
  const int device = t.index;
  w.body = [c, device, call, mark, tail, body = std::forward<Body>(body)] {
    Backend& b = c->backend_in_queue(device, call);
    if (!b.has_completions()) {
      throw Error(gjUnsupported, std::string(call) +
                                     ": nonblocking operations on device buffers need completion events, which this "
                                     "build's device backend does not record; use the blocking call (stream-ordered)");
    }
    void* own = b.own_stream();
    mark->make_wait(own);
    body(b, own);
    tail->set(b, b.record_completion(own));
  };
  *request = requests::make_deferred(c, c->queue->submit(std::move(w)), std::move(tail));
}

// Runs body(backend, stream) now (request == NULL) or as a request. Host work goes through the
// communicator's queue; device work is deferred (issue_deferred) or, without a progress
// thread, enqueued on the caller's stream from this thread after every earlier host request,
// its request completing with an event.
//
// Every call is counted into the communicator's progress (peer/progress.h) when it is issued
// and out when its result is ready: here for blocking calls and device calls without a progress
// thread, by the queue for what it runs (host requests, deferred device requests).
template <class Body>
void issue(gjComm* c, const Target& t, Work w, Body&& body, gjRequest_t* request, void* stream) {
  Entered entered(c, w);
  const char* call = w.call;
  if (request == nullptr) {
    return c->queue->run_blocking(w, [&] {
      body(t.backend != nullptr ? *t.backend : c->backend_in_queue(t.index, call), stream);
    });
  }
  if (!t.device) {
    w.body = [b = t.backend, stream, body = std::forward<Body>(body)] { body(*b, stream); };
    *request = requests::make_host(c, c->queue->submit(std::move(w)));
    entered.queued();
    return;
  }
  if (defer_device(c, request)) {
    issue_deferred(c, t, std::move(w), std::forward<Body>(body), request, stream);
    entered.queued();
    return;
  }
  // No progress thread: enqueued on the caller's stream now, after every earlier request. The
  // capture and stream checks first (StreamMark), so a refusal has no side effect on any rank.
  (void)cuda::StreamMark(t.index, stream, call);
  Backend* used = nullptr;
  void* handle = nullptr;
  c->queue->run_blocking(w, [&] {
    Backend& b = c->backend_in_queue(t.index, call);
    if (!b.has_completions()) {
      throw Error(gjUnsupported, std::string(call) +
                                     ": nonblocking operations on device buffers need completion events, which "
                                     "this build's device backend does not record; use the blocking call");
    }
    body(b, stream);
    handle = b.record_completion(stream);
    used = &b;
  });
  *request = requests::make_polled(c, *used, handle);
}

// The work item of one call: what the agreement check compares across ranks (kind, element
// count, dtype; the caller adds what else identifies the operation), checked when
// GJ_COLL_CHECK asks.
Work work_for(const Op& o, const gjComm* c, Kind kind, std::uint64_t count) {
  Work w;
  w.call = o.call;
  w.sig.kind = kind;
  w.sig.count = count;
  w.sig.dtype = static_cast<std::uint64_t>(o.dtype());
  w.agree_first = c->runs_agreement_check(false);
  return w;
}

// A reduction's work item: also its op and scale factors.
Work reduction_work(const Op& o, const gjComm* c, Kind kind, std::uint64_t count) {
  Work w = work_for(o, c, kind, count);
  w.sig.op = static_cast<std::uint64_t>(o.op());
  w.sig.scale = hash_scale(o.scale.pre, o.scale.post);
  return w;
}

void issue_allreduce(gjComm* c, const Op& o, const Checked&, gjRequest_t* request) {
  const void* buffers[] = {o.sendbuff, o.recvbuff};
  const char* names[] = {"sendbuff", "recvbuff"};
  const Target t = target_of(c, o.call, buffers, names, 2);
  Work w = reduction_work(o, c, Kind::AllReduce, o.count);
  if (!t.device && request != nullptr) {
    w.fuse = Work::Fusible{o.sendbuff, o.recvbuff, o.count, o.dtype(), o.op(), o.scale, c->fusion_threshold};
  }
  auto body = [o](Backend& b, void* stream) {
    if (o.count > 0) b.allreduce_scaled(o.sendbuff, o.recvbuff, o.count, o.dtype(), o.op(), o.scale, stream);
  };
  issue(c, t, std::move(w), std::move(body), request, o.stream);
}

void issue_grouped(gjComm* c, const Op& o, const Checked& k, gjRequest_t* request) {
  std::vector<const void*> sends, buffers;
  std::vector<void*> recvs;
  std::vector<std::size_t> counts;
  std::vector<std::string> names;
  for (int i = 0; i < o.ntensors; ++i) {
    sends.push_back(o.sendbuffs[i]);
    recvs.push_back(o.recvbuffs[i]);
    counts.push_back(o.counts[i]);
    if (o.counts[i] == 0) continue;
    buffers.push_back(o.sendbuffs[i]);
    buffers.push_back(o.recvbuffs[i]);
    names.push_back("sendbuffs[" + std::to_string(i) + "]");
    names.push_back("recvbuffs[" + std::to_string(i) + "]");
  }
  std::vector<const char*> name_ptrs;
  for (const std::string& name : names) name_ptrs.push_back(name.c_str());
  const Target t = target_of(c, o.call, buffers.data(), name_ptrs.data(), static_cast<int>(buffers.size()));
  Work w = reduction_work(o, c, Kind::GroupedAllReduce, k.total);
  w.sig.ntensors = static_cast<std::uint64_t>(o.ntensors);
  w.sig.counts_hash = hash_counts(o.counts, o.ntensors);
  w.agree_first = c->runs_agreement_check(true);
  const std::size_t threshold = c->fusion_threshold;
  const std::size_t total = k.total;
  auto body = [o, total, threshold, sends = std::move(sends), recvs = std::move(recvs),
               counts = std::move(counts)](Backend& b, void* stream) {
    if (total == 0) return;
    grouped_allreduce(b, sends.data(), recvs.data(), counts.data(), o.ntensors, o.dtype(), o.op(), o.scale, threshold,
                      stream);
  };
  issue(c, t, std::move(w), std::move(body), request, o.stream);
}

void issue_broadcast(gjComm* c, const Op& o, const Checked&, gjRequest_t* request) {
  const void* buffers[] = {o.recvbuff};
  const char* names[] = {"buff"};
  const Target t = target_of(c, o.call, buffers, names, 1);
  Work w = work_for(o, c, Kind::Broadcast, o.count);
  w.sig.root = static_cast<std::uint64_t>(o.root);
  auto body = [o](Backend& b, void* stream) {
    if (o.count > 0) b.broadcast(o.recvbuff, o.count, o.dtype(), o.root, stream);
  };
  issue(c, t, std::move(w), std::move(body), request, o.stream);
}

void issue_allgather(gjComm* c, const Op& o, const Checked& k, gjRequest_t* request) {
  std::vector<std::size_t> counts = o.kind == OpKind::AllGather
                                        ? std::vector<std::size_t>(static_cast<std::size_t>(c->size), o.count)
                                        : std::vector<std::size_t>(o.recvcounts, o.recvcounts + c->size);
  const std::size_t mine = counts[static_cast<std::size_t>(c->rank)];
  const void* buffers[] = {mine > 0 ? o.sendbuff : nullptr, o.recvbuff};
  const char* names[] = {"sendbuff", "recvbuff"};
  const Target t = target_of(c, o.call, buffers, names, 2);
  Work w = work_for(o, c, Kind::AllGather, k.total);
  if (w.agree_first) w.sig.counts_hash = hash_counts(counts.data(), c->size);
  const std::size_t total = k.total;
  auto body = [o, total, counts = std::move(counts)](Backend& b, void* stream) {
    if (total > 0) b.allgatherv(o.sendbuff, o.recvbuff, counts.data(), o.dtype(), stream);
  };
  issue(c, t, std::move(w), std::move(body), request, o.stream);
}

// An allgather whose receive side is planned when it runs: host buffers only (the plan runs on
// the progress thread, which enqueues nothing on a caller's stream).
void issue_allgather_late(gjComm* c, const Op& o, const Checked&, gjRequest_t* request) {
  const void* buffers[] = {o.count > 0 ? o.sendbuff : nullptr};
  const char* names[] = {"sendbuff"};
  const Target t = target_of(c, o.call, buffers, names, 1);
  if (t.device) {
    throw Error(gjUnsupported, std::string(o.call) +
                                   ": sendbuff is device memory; the receive plan runs on the "
                                   "progress thread, for host buffers only (use gjIallGatherV)");
  }
  Work w = work_for(o, c, Kind::AllGather, 0);  // the counts are the plan's
  Backend* b = t.backend;
  const int rank = c->rank;
  const auto size = static_cast<std::size_t>(c->size);
  w.body = [b, o, rank, size] {
    std::vector<std::size_t> counts(size, 0);
    void* recvbuff = nullptr;
    if (o.plan(o.plan_arg, counts.data(), &recvbuff) != 0) return;  // skipped on every rank
    if (counts[static_cast<std::size_t>(rank)] != o.count) {
      throw Error(gjInvalidArgument, std::string(o.call) + ": the receive plan gives this rank (" +
                                         std::to_string(rank) + ") " +
                                         std::to_string(counts[static_cast<std::size_t>(rank)]) +
                                         " elements but sendcount=" + std::to_string(o.count));
    }
    std::size_t total = 0;
    for (std::size_t n : counts) total += n;
    validate::buffer(o.call, "the plan's recvbuff", recvbuff, total);
    if (total > 0) b->allgatherv(o.sendbuff, recvbuff, counts.data(), o.dtype(), nullptr);
  };
  Entered entered(c, w);
  *request = requests::make_host(c, c->queue->submit(std::move(w)));
  entered.queued();
}

void issue_reduce_scatter(gjComm* c, const Op& o, const Checked& k, gjRequest_t* request) {
  std::vector<std::size_t> counts(o.recvcounts, o.recvcounts + c->size);
  const std::size_t mine = counts[static_cast<std::size_t>(c->rank)];
  const void* buffers[] = {o.sendbuff, mine > 0 ? o.recvbuff : nullptr};
  const char* names[] = {"sendbuff", "recvbuff"};
  const Target t = target_of(c, o.call, buffers, names, 2);
  Work w = reduction_work(o, c, Kind::ReduceScatter, k.total);
  if (w.agree_first) w.sig.counts_hash = hash_counts(counts.data(), c->size);
  const std::size_t total = k.total;
  auto body = [o, total, counts = std::move(counts)](Backend& b, void* stream) {
    if (total > 0) b.reduce_scatter(o.sendbuff, o.recvbuff, counts.data(), o.dtype(), o.op(), o.scale, stream);
  };
  issue(c, t, std::move(w), std::move(body), request, o.stream);
}

void issue_alltoallv(gjComm* c, const Op& o, const Checked&, gjRequest_t* request) {
  std::vector<std::size_t> sc(o.sendcounts, o.sendcounts + c->size), rc(o.recvcounts, o.recvcounts + c->size);
  std::size_t out = 0, in = 0;
  for (int r = 0; r < c->size; ++r) {
    out += sc[static_cast<std::size_t>(r)];
    in += rc[static_cast<std::size_t>(r)];
  }
  const void* buffers[] = {out > 0 ? o.sendbuff : nullptr, in > 0 ? o.recvbuff : nullptr};
  const char* names[] = {"sendbuff", "recvbuff"};
  // A rank that sends and receives nothing still takes its peers' path (alltoall_device).
  const int device = c->alltoall_device(buffers_device(o.call, buffers, names, 2),
                                        buffers[0] == nullptr && buffers[1] == nullptr, o.call);
  const Target t = device_or_host(c, o.call, device);
  // Counts differ per rank: the record agrees on the kind and dtype, and the body checks each
  // pair's counts (recvcounts[q] here == rank q's sendcounts for this rank) when checking.
  Work w = work_for(o, c, Kind::AllToAll, 0);
  const bool pairs = w.agree_first;
  const MPI_Comm mpi = c->mpi;
  auto body = [o, pairs, mpi, sc = std::move(sc), rc = std::move(rc)](Backend& b, void* stream) {
    if (pairs) alltoall::require_matching_counts(mpi, o.call, sc.data(), rc.data());
    b.alltoallv(o.sendbuff, sc.data(), o.recvbuff, rc.data(), o.dtype(), stream);
  };
  issue(c, t, std::move(w), std::move(body), request, o.stream);
}

void issue_adasum(gjComm* c, const Op& o, const Checked&, gjRequest_t* request) {
  const void* buffers[] = {o.sendbuff, o.recvbuff};
  const char* names[] = {"sendbuff", "recvbuff"};
  if (buffers_device(o.call, buffers, names, 2) >= 0) {
    throw Error(gjUnsupported, std::string(o.call) +
                                   ": device buffers are not combined on the device; copy them to "
                                   "host memory first (gj.torch stages CUDA tensors that way)");
  }
  Work w = work_for(o, c, Kind::Adasum, o.count);
  const MPI_Comm mpi = c->mpi;
  auto body = [o, mpi](Backend&, void*) { adasum::host_adasum(mpi, o.sendbuff, o.recvbuff, o.count, o.dtype()); };
  issue(c, Target{false, -1, c->host.get()}, std::move(w), std::move(body), request, nullptr);
}

void issue_barrier(gjComm* c, const Op& o, const Checked&, gjRequest_t* request) {
  Work w;
  w.call = o.call;
  w.sig.kind = Kind::Barrier;
  w.agree_first = c->runs_agreement_check(false);
  const MPI_Comm mpi = c->mpi;
  const char* call = o.call;
  auto body = [mpi, call](Backend&, void*) { mpi_check(MPI_Barrier(mpi), std::string(call) + ": MPI_Barrier"); };
  issue(c, Target{false, -1, c->host.get()}, std::move(w), std::move(body), request, nullptr);
}

void issue_op(gjComm* c, const Op& o, const Checked& k, gjRequest_t* request) {
  switch (o.kind) {
    case OpKind::AllReduce:
      return issue_allreduce(c, o, k, request);
    case OpKind::GroupedAllReduce:
      return issue_grouped(c, o, k, request);
    case OpKind::Broadcast:
      return issue_broadcast(c, o, k, request);
    case OpKind::AllGather:
    case OpKind::AllGatherV:
      return issue_allgather(c, o, k, request);
    case OpKind::AllGatherVLate:
      return issue_allgather_late(c, o, k, request);
    case OpKind::ReduceScatter:
      return issue_reduce_scatter(c, o, k, request);
    case OpKind::AllToAllV:
      return issue_alltoallv(c, o, k, request);
    case OpKind::Adasum:
      return issue_adasum(c, o, k, request);
    case OpKind::Barrier:
      return issue_barrier(c, o, k, request);
  }
  throw Error(gjInternalError, std::string(o.call) + ": no issue path for this collective");
}

}  // namespace

gjResult_t enqueue(const Op& o, gjComm_t comm, gjRequest_t* request, bool nonblocking) {
  return entry::guarded(o.call, comm, [&] {
    // A C caller's out-of-range enum must not be loaded as the C++ enum (undefined
    // behaviour): the raw bits are checked first.
    if (takes_dtype(o.kind)) validate::dtype(o.call, o.dtype_bits);
    if (takes_op(o.kind)) validate::op(o.call, o.op_bits);
    if (nonblocking) {
      validate::out_pointer(o.call, "request", request);
      *request = nullptr;
    }
    gjComm* c = entry::live(o.call, comm);
    const Checked k = check_op(*c, o);
    issue_op(c, o, k, nonblocking ? request : nullptr);
  });
}

}  // namespace gj
