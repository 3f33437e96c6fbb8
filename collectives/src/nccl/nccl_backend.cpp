// The NCCL backend: device buffers, stream-ordered collectives on the caller's stream.
//
// Nothing here waits for the GPU on the normal path. The backend waits (polling NCCL's
// asynchronous error state, bounded by GJ_COLL_TIMEOUT_MS) only at destruction
// (ncclCommFinalize) for the NCCL operations it enqueued, and in gjWait on a device request.
// Owned buffers are allocated and freed in stream order (cudaMallocAsync / cudaFreeAsync: no
// device-wide synchronization); reuse from another stream is ordered on the device with an event.
//
// Device requests (gjI* on device buffers): the call's work is enqueued as by the blocking call,
// then an event (from a pool) is recorded on the same stream; the request is that event.
// gjTest queries it, gjWait polls it bounded by GJ_COLL_TIMEOUT_MS (a stalled peer gives
// gjTimeout and aborts the communicator), and either returns the event to the pool.
#include "nccl_backend.h"

#include <cuda_runtime_api.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "../alltoall/alltoall_plan.h"
#include "../cuda/batched_copy.h"
#include "../cuda/check.h"
#include "../cuda/device.h"
#include "../cuda/elementwise.h"
#include "../dtype.h"
#include "../error.h"
#include "../mpi_base/mpi_check.h"
#include "handle_pool.h"
#include "nccl_buffer.h"
#include "nccl_comm.h"
#include "nccl_loader.h"
#include "nccl_plan.h"

namespace gj {
namespace {

using cuda::check;

// Makes the backend's device current for the duration of a call and restores the caller's,
// unless the caller's has no CUDA context yet: cudaSetDevice would create one there (a rank's
// context on GPU 0 before its script's torch.cuda.set_device), so the backend's stays current,
// as PyTorch's device guards do.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    check(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) check(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
  }
  ~DeviceScope() {
    int now = previous_;
    if (cudaGetDevice(&now) == cudaSuccess && now != previous_ && cuda::has_context(previous_)) {
      (void)cudaSetDevice(previous_);
    }
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

cudaEvent_t make_event() {
  cudaEvent_t e = nullptr;
  check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  return e;
}

bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  check(cudaStreamIsCapturing(stream, &status), "cudaStreamIsCapturing");
  return status != cudaStreamCaptureStatusNone;
}

std::string hostname() {
  char host[256] = {};
  (void)gethostname(host, sizeof host - 1);
  return host;
}

// This host's identity as NCCL tells hosts apart (nccl_plan.h, host_hash).
std::uint64_t this_host(const NcclEnv& env) {
  std::string boot_id;
  if (std::FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
    char buf[64] = {};
    if (std::fgets(buf, sizeof buf, f) != nullptr) boot_id = buf;
    std::fclose(f);
    while (!boot_id.empty() && (boot_id.back() == '\n' || boot_id.back() == ' ')) boot_id.pop_back();
  }
  return nccl::host_hash(hostname(), boot_id, env.host_id);
}

// NCCL found (the first call searches: nccl_search.h) and `device` usable: the communicator's
// NCCL runs there. Throws gjUnsupported when either is missing. Returns where this rank is.
nccl::Placement select_device(int device, const Config& config) {
  const nccl::Library& lib = nccl::library(config.nccl);
  if (!lib.ok) throw Error(gjUnsupported, lib.error);
  if (cuda::device_count() == 0) {
    throw Error(gjUnsupported,
                "make_nccl_backend: no CUDA device is visible to this process (cudaGetDeviceCount=0; "
                "check CUDA_VISIBLE_DEVICES and the driver), so device buffers cannot use NCCL");
  }
  nccl::Placement p;
  std::snprintf(p.host, sizeof p.host, "%s", hostname().c_str());
  p.host_hash = this_host(config.nccl);
  check(cudaDeviceGetPCIBusId(p.bus_id, sizeof p.bus_id, device),
        "cudaDeviceGetPCIBusId(device=" + std::to_string(device) + ")");
  return p;
}

// A grow-only device buffer with the ordering of its uses (nccl_buffer.h).
struct DeviceBuffer {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  cudaEvent_t done = nullptr;   // recorded after the last use
  cudaStream_t stream = nullptr;
  bool stream_set = false;
  bool used_in_capture = false;
  std::vector<void*> kept;      // replaced while graphs may still reference them

  bool contains(const void* p) const {
    const auto* c = static_cast<const char*>(p);
    const auto* b = static_cast<const char*>(ptr);
    return ptr != nullptr && c >= b && c < b + bytes;
  }
};

class NcclBackend final : public Backend {
 public:
  // The caller has made `device` current (make_nccl_backend).
  NcclBackend(MPI_Comm comm, int device, const Config& config)
      : device_(agree_on_device(comm, device, config)), comm_(comm, config.timeout_ms) {
    fusion_.done = make_event();
    scratch_.done = make_event();
    comm_.start_watchdog(device_);
  }

  ~NcclBackend() override {
    // A destructor can only report: every failure goes to stderr (a failing wait has aborted
    // the communicator).
    comm_.stop_watchdog();
    try {
      DeviceScope scope(device_);
      // Waits, bounded by the timeout, until every enqueued NCCL operation has completed; the
      // kernels around them (pack, scale, divide, unpack) then finish on their own.
      comm_.finalize();
      // After an abort the buffers are left to process exit: freeing synchronizes the device,
      // which could block on work that never finishes.
      // The caller's streams may be gone by now: wait for each buffer's last use, then free it on
      // the default stream (no device-wide synchronization).
      if (!comm_.aborted()) {
        for (DeviceBuffer* b : {&fusion_, &scratch_}) {
          if (b->stream_set) check(cudaEventSynchronize(b->done), "cudaEventSynchronize(owned buffer's last use)");
          if (b->ptr != nullptr) check(cudaFreeAsync(b->ptr, cudaStreamLegacy), "cudaFreeAsync(owned buffer)");
          for (void* p : b->kept) check(cudaFreeAsync(p, cudaStreamLegacy), "cudaFreeAsync(owned buffer kept for CUDA graphs)");
        }
      }
      (void)cudaEventDestroy(fusion_.done);
      (void)cudaEventDestroy(scratch_.done);
      // After finalize its work is done; after an abort NCCL ended its kernels.
      if (own_ != nullptr && !comm_.aborted()) (void)cudaStreamDestroy(own_);
      for (cudaEvent_t e : requests_.drain()) (void)cudaEventDestroy(e);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gj collectives: NCCL backend teardown: %s\n", e.what());
    }
  }

  gjBackend_t kind() const override { return gjBackendNccl; }

  void allreduce(const void* send, void* recv, std::size_t count, gjDataType_t dtype, gjRedOp_t op,
                 void* stream_v) override {
    const auto lock = comm_.guard();
    reduce(send, recv, count, dtype, op, nccl::ScaledPlan{nccl::plan_allreduce(dtype, op, comm_.size())}, stream_v);
  }

  void allreduce_scaled(const void* send, void* recv, std::size_t count, gjDataType_t dtype, gjRedOp_t op,
                        Scale scale, void* stream_v) override {
    const auto lock = comm_.guard();
    reduce(send, recv, count, dtype, op, nccl::plan_scaled(dtype, op, comm_.size(), scale.pre, scale.post),
           stream_v);
  }

  void broadcast(void* buf, std::size_t count, gjDataType_t dtype, int root, void* stream_v) override {
    const auto lock = comm_.guard();
    const nccl::Operation what{"ncclBroadcast", count, dtype, gjSum, root};
    // NCCL must never see an argument it would reject: its error would abort the communicator.
    if (root < 0 || root >= comm_.size()) {
      throw Error(gjInvalidArgument, "broadcast: root=" + std::to_string(root) + " is not a rank of this " +
                                         std::to_string(comm_.size()) + "-rank communicator (0.." +
                                         std::to_string(comm_.size() - 1) + ")");
    }
    const auto call = begin(what, count, buf, nullptr, stream_v);
    if (!call) return;
    const cudaStream_t stream = call->stream;
    const nccl::Movement m = nccl::to_movement(dtype, count);
    comm_.complete_lazy(ncclBroadcast(buf, buf, m.count, m.dtype, root, comm_.get(), stream),
                        [&] { return nccl::describe(what); });
    track(stream, what);
  }

  void allgatherv(const void* send, void* recv, const std::size_t* counts, gjDataType_t dtype,
                  void* stream_v) override {
    const auto lock = comm_.guard();
    const nccl::PerRankPlan plan = nccl::plan_per_rank(counts, comm_.size());
    const nccl::Operation what{plan.equal ? "ncclAllGather" : "ncclBroadcast(per-rank allgather)", plan.total,
                               dtype, gjSum, nccl::Operation::kCopy};
    const auto call = begin(what, plan.total, send, recv, stream_v);
    if (!call) return;
    const cudaStream_t stream = call->stream;
    const std::size_t esize = dtype_size(dtype);
    if (plan.equal) {
      const nccl::Movement m = nccl::to_movement(dtype, plan.count);
      comm_.complete_lazy(ncclAllGather(send, recv, m.count, m.dtype, comm_.get(), stream),
                          [&] { return nccl::describe(what); });
      track(stream, what);
      return;
    }
    // Every rank's slice broadcast from its owner, one NCCL group (every rank enqueues the same
    // list: counts are the same everywhere).
    auto* out = static_cast<char*>(recv);
    group([&] {
      for (const nccl::Slice& s : plan.slices) {
        const nccl::Movement m = nccl::to_movement(dtype, s.count);
        void* slot = out + s.offset * esize;
        const void* from = s.rank == comm_.rank() ? send : slot;
        const ncclResult_t r = ncclBroadcast(from, slot, m.count, m.dtype, s.rank, comm_.get(), stream);
        if (r != ncclSuccess) return r;
      }
      return ncclSuccess;
    }, what);
    track(stream, what);
  }

  void reduce_scatter(const void* send, void* recv, const std::size_t* counts, gjDataType_t dtype, gjRedOp_t op,
                      Scale scale, void* stream_v) override {
    const auto lock = comm_.guard();
    const nccl::PerRankPlan per_rank = nccl::plan_per_rank(counts, comm_.size());
    const nccl::ScaledPlan plan = nccl::plan_scaled(dtype, op, comm_.size(), scale.pre, scale.post);
    const nccl::Operation what{per_rank.equal ? "ncclReduceScatter" : "ncclReduce(per-rank reduce-scatter)",
                               per_rank.total, dtype, op, nccl::Operation::kReduction};
    const auto call = begin(what, per_rank.total, send, recv, stream_v);
    if (!call) return;
    const cudaStream_t stream = call->stream;
    const std::size_t esize = dtype_size(dtype);
    const std::size_t mine = counts[comm_.rank()];
    // Pre-scaling needs a copy of the whole input (send is const, recv holds one slice).
    const void* input = send;
    const bool scaled_input = plan.reduce.prescale != 0.0;
    if (scaled_input) {
      void* tmp = owned(scratch_, per_rank.total * esize, stream, "reduce-scatter scratch");
      order_use(scratch_, stream);
      cuda::scale(tmp, send, per_rank.total, dtype, plan.reduce.prescale, stream);
      input = tmp;
    }
    if (per_rank.equal) {
      comm_.complete_lazy(ncclReduceScatter(input, recv, per_rank.count, plan.reduce.dtype, plan.reduce.op,
                                            comm_.get(), stream),
                          [&] { return nccl::describe(what); });
    } else {
      const auto* in = static_cast<const char*>(input);
      group([&] {
        for (const nccl::Slice& s : per_rank.slices) {
          // recvbuff is written on the root only.
          const ncclResult_t r = ncclReduce(in + s.offset * esize, recv, s.count, plan.reduce.dtype,
                                            plan.reduce.op, s.rank, comm_.get(), stream);
          if (r != ncclSuccess) return r;
        }
        return ncclSuccess;
      }, what);
    }
    track(stream, what);
    if (scaled_input) record_use(scratch_, stream);
    finish(recv, mine, dtype, plan, stream);
  }

  // Alltoall-v: one ncclSend and one ncclRecv per peer with a non-empty block, in one NCCL
  // group (NCCL >= 2.7). Not run on a device here: tested only against the emulated NCCL.
  void alltoallv(const void* send, const std::size_t* sendcounts, void* recv, const std::size_t* recvcounts,
                 gjDataType_t dtype, void* stream_v) override {
    const auto lock = comm_.guard();
    const int n = comm_.size();
    const std::vector<std::size_t> sdispl = alltoall::offsets(sendcounts, n), rdispl = alltoall::offsets(recvcounts, n);
    const nccl::Operation what{"ncclSend/ncclRecv(alltoall)", sdispl.back() + sendcounts[n - 1], dtype, gjSum,
                               nccl::Operation::kCopy};
    const std::size_t received = rdispl.back() + recvcounts[n - 1];
    const auto call = begin(what, what.count + received, what.count > 0 ? send : nullptr,
                            received > 0 ? recv : nullptr, stream_v);
    if (!call) return;
    const cudaStream_t stream = call->stream;
    const std::size_t esize = dtype_size(dtype);
    group([&] {
      for (int q = 0; q < n; ++q) {
        const std::size_t p = static_cast<std::size_t>(q);
        if (sendcounts[q] > 0) {
          const nccl::Movement m = nccl::to_movement(dtype, sendcounts[q]);
          const ncclResult_t r = ncclSend(static_cast<const char*>(send) + sdispl[p] * esize, m.count, m.dtype, q,
                                          comm_.get(), stream);
          if (r != ncclSuccess) return r;
        }
        if (recvcounts[q] > 0) {
          const nccl::Movement m = nccl::to_movement(dtype, recvcounts[q]);
          const ncclResult_t r = ncclRecv(static_cast<char*>(recv) + rdispl[p] * esize, m.count, m.dtype, q,
                                          comm_.get(), stream);
          if (r != ncclSuccess) return r;
        }
      }
      return ncclSuccess;
    }, what);
    track(stream, what);
  }

  void* fusion_buffer(std::size_t bytes, void* stream_v) override {
    const auto lock = comm_.guard();
    comm_.ensure_usable("fusion_buffer");
    return owned(fusion_, bytes, static_cast<cudaStream_t>(stream_v), "fusion buffer");
  }

  void pack(void* dst, const void* const* srcs, const std::size_t* bytes, const std::size_t* offsets, int n,
            void* stream_v) override {
    batched_copy("pack", dst, stream_v, [&](cudaStream_t s) { cuda::pack(dst, srcs, bytes, offsets, n, s); });
  }

  void unpack(void* const* dsts, const void* src, const std::size_t* bytes, const std::size_t* offsets, int n,
              void* stream_v) override {
    batched_copy("unpack", src, stream_v, [&](cudaStream_t s) { cuda::unpack(dsts, src, bytes, offsets, n, s); });
  }

  void abort() noexcept override {
    const auto lock = comm_.guard();
    comm_.abort();
  }

  // Device requests. Outside a capture only: an event recorded during capture marks a node of
  // the graph, and querying it from the host says nothing about any replay.
  bool has_completions() const override { return true; }

  void check_completion_stream(void* stream_v) override {
    DeviceScope scope(device_);
    if (capturing(static_cast<cudaStream_t>(stream_v))) {
      throw Error(gjInvalidUsage, "a nonblocking operation on device buffers cannot be issued during CUDA graph "
                                  "capture (its request would complete with the capture, not with a replay); "
                                  "capture the blocking call and synchronize on the graph launch's stream");
    }
  }

  void* record_completion(void* stream_v) override {
    check_completion_stream(stream_v);
    const auto lock = comm_.guard();
    comm_.ensure_usable(kRequest);
    DeviceScope scope(device_);
    cudaEvent_t e = nullptr;
    if (!requests_.take(&e)) {
      e = make_event();
      requests_.created();
    }
    const cudaError_t r = cudaEventRecord(e, static_cast<cudaStream_t>(stream_v));
    if (r != cudaSuccess) {
      give_back(e);
      check(r, "cudaEventRecord(device request)");
    }
    return e;
  }

  void* own_stream() override {
    const auto lock = comm_.guard();
    comm_.ensure_usable("the backend's stream");
    if (own_ == nullptr) {
      DeviceScope scope(device_);
      // Non-blocking: never joined with the legacy stream's work, which a caller may be using.
      check(cudaStreamCreateWithFlags(&own_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags(the backend's stream)");
    }
    return own_;
  }

  bool completion_done(void* handle) override {
    const auto lock = comm_.guard();
    return comm_.done(static_cast<cudaEvent_t>(handle), kRequest);
  }

  void completion_wait(void* handle) override {
    const auto lock = comm_.guard();
    comm_.wait(static_cast<cudaEvent_t>(handle), kRequest);
  }

  void completion_release(void* handle) noexcept override {
    const auto lock = comm_.guard();
    give_back(static_cast<cudaEvent_t>(handle));
  }

 private:
  // Every rank must find NCCL and a device, and no two ranks may share a device (NCCL < 2.30
  // refuses it), before any of them enters ncclCommInitRank, or the ranks that did would wait
  // there for the ones that did not. One MPI_Allgather of every rank's host and PCI bus id.
  static int agree_on_device(MPI_Comm comm, int device, const Config& config) {
    nccl::Placement mine;
    std::string local_error;
    try {
      mine = select_device(device, config);
      mine.ok = 1;
    } catch (const Error& e) {
      local_error = e.what();
    }
    int size = 1;
    mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    std::vector<nccl::Placement> all(static_cast<std::size_t>(size));
    mpi_check(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, comm),
              "MPI_Allgather(device check before NCCL init)");
    if (!mine.ok) throw Error(gjUnsupported, local_error);
    for (const nccl::Placement& p : all) {
      if (!p.ok) {
        throw Error(gjUnsupported, "make_nccl_backend: another rank has no usable NCCL or CUDA device, so no "
                                   "rank can use NCCL (see that rank's error)");
      }
    }
    if (const std::string shared = nccl::shared_device(all, nccl::library().version, config.nccl.multi_rank_gpu);
        !shared.empty()) {
      throw Error(gjUnsupported, shared);
    }
    return device;
  }

  // What every operation does first: the communicator usable, nothing to do for count == 0,
  // the buffers on this communicator's device, then that device current for the rest of the call.
  struct Call {
    Call(int device, cudaStream_t s) : scope(device), stream(s) {}
    DeviceScope scope;
    cudaStream_t stream;
  };
  [[nodiscard]] std::optional<Call> begin(const nccl::Operation& what, std::size_t count, const void* send,
                                          const void* recv, void* stream_v) {
    comm_.ensure_usable(what.call);
    on_my_stream(static_cast<cudaStream_t>(stream_v));
    if (count == 0) return std::nullopt;
    on_my_device(send, "sendbuff");
    on_my_device(recv, "recvbuff");
    return std::optional<Call>(std::in_place, device_, static_cast<cudaStream_t>(stream_v));
  }

  // A buffer on another device than the communicator's would be a wrong-device access inside
  // NCCL (or a silent peer copy): refused with the fix.
  void on_my_device(const void* p, const char* name) const {
    if (p == nullptr) return;
    const int d = cuda::pointer_device(p);
    if (d >= 0 && d != device_) {
      throw Error(gjInvalidArgument, std::string(name) + " is memory of CUDA device " + std::to_string(d) +
                                         " but this communicator's NCCL runs on device " + std::to_string(device_) +
                                         " (the device of the first device buffer this communicator saw; use one "
                                         "device per rank, or one communicator per device)");
    }
  }

  // NCCL enqueues on the stream it is given: one of another device is an unhandled CUDA error
  // inside NCCL, which would abort the communicator. NULL (and the per-thread default stream)
  // is this device's own default stream, made current for the call.
  void on_my_stream(cudaStream_t stream) const {
    if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) return;
    int d = -1;
    check(cudaStreamGetDevice(stream, &d), "cudaStreamGetDevice");
    if (d != device_) {
      throw Error(gjInvalidArgument, "stream belongs to CUDA device " + std::to_string(d) +
                                         " but this communicator's NCCL runs on device " + std::to_string(device_) +
                                         " (pass a stream of the buffers' device, e.g. torch.cuda.current_stream() "
                                         "with that device current, or NULL for its default stream)");
    }
  }

  void reduce(const void* send, void* recv, std::size_t count, gjDataType_t dtype, gjRedOp_t op,
              const nccl::ScaledPlan& plan, void* stream_v) {
    const nccl::Operation what{"ncclAllReduce", count, dtype, op, nccl::Operation::kReduction};
    const auto call = begin(what, count, send, recv, stream_v);
    if (!call) return;
    const cudaStream_t stream = call->stream;
    const bool fused = fusion_.contains(send) || fusion_.contains(recv);
    if (fused) order_use(fusion_, stream);
    if (plan.reduce.prescale != 0.0) {
      cuda::scale(recv, send, count, dtype, plan.reduce.prescale, stream);
      send = recv;
    }
    comm_.complete_lazy(ncclAllReduce(send, recv, count, plan.reduce.dtype, plan.reduce.op, comm_.get(), stream),
                        [&] { return nccl::describe(what); });
    track(stream, what);
    finish(recv, count, dtype, plan, stream);
    if (fused) record_use(fusion_, stream);
  }

  // pack/unpack: copy(stream) on the caller's stream, ordered against the fusion buffer's other
  // users when `packed` (the one contiguous side) lies in it.
  template <class Copy>
  void batched_copy(const char* call, const void* packed, void* stream_v, Copy&& copy) {
    const auto lock = comm_.guard();
    comm_.ensure_usable(call);
    const auto stream = static_cast<cudaStream_t>(stream_v);
    on_my_stream(stream);
    DeviceScope scope(device_);
    const bool fused = fusion_.contains(packed);
    if (fused) order_use(fusion_, stream);
    copy(stream);
    if (fused) record_use(fusion_, stream);
  }

  // The watchdog times the operation (nccl_watchdog.h); not inside a graph capture, where an
  // event recorded marks a graph node, not this enqueue.
  void track(cudaStream_t stream, const nccl::Operation& what) {
    if (!capturing(stream)) comm_.track(stream, what);
  }

  // What follows the collective: gjAvg's integer division, then the postscale factor.
  static void finish(void* recv, std::size_t count, gjDataType_t dtype, const nccl::ScaledPlan& plan,
                     cudaStream_t stream) {
    if (count == 0) return;
    if (plan.reduce.postdivide != 0) cuda::divide(recv, count, dtype, plan.reduce.postdivide, stream);
    if (plan.postscale != 0.0) cuda::scale(recv, recv, count, dtype, plan.postscale, stream);
  }

  // Several NCCL calls as one group; enqueue() returns the first failed call's result.
  template <class Enqueue>
  void group(Enqueue&& enqueue, const nccl::Operation& what) {
    comm_.complete(ncclGroupStart(), "ncclGroupStart");
    const ncclResult_t r = enqueue();
    const ncclResult_t end = ncclGroupEnd();
    comm_.complete(r != ncclSuccess ? r : end, nccl::describe(what));
  }

  // The owned buffer b, at least bytes long (nccl_buffer.h), for use on the caller's stream:
  // whether that stream is being captured decides (a capture on a non-blocking stream, as
  // torch's, is invisible to a query of the legacy stream).
  void* owned(DeviceBuffer& b, std::size_t bytes, cudaStream_t stream, const char* what) {
    DeviceScope scope(device_);
    const bool in_capture = capturing(stream);
    switch (nccl::plan_buffer_use(b.bytes, b.ptr != nullptr, bytes, in_capture)) {
      case nccl::BufferAction::Reuse:
        break;
      case nccl::BufferAction::RefuseCapture:
        throw Error(gjInvalidUsage, std::string(what) + ": needs " + std::to_string(bytes) +
                                        " bytes of device memory, which cannot be allocated during CUDA graph "
                                        "capture; run the same call once before capturing");
      case nccl::BufferAction::Grow: {
        // Stream-ordered allocation: cudaMalloc/cudaFree would synchronize the whole device
        // (every stream of torch's and other communicators) and never wait for the old buffer's
        // last use on the device. The old buffer is freed on its last user's stream, after that
        // use; the new one is allocated on the caller's stream and ordered for other streams.
        void* grown = nullptr;
        const cudaError_t e = cudaMallocAsync(&grown, bytes, stream);
        if (e != cudaSuccess) {
          cuda::throw_cuda_error(e, std::string("cudaMallocAsync(") + what + ", bytes=" + std::to_string(bytes) +
                                        "; other allocators, e.g. PyTorch's cache, may hold the device's memory: "
                                        "lower GJ_COLL_FUSION_BYTES or call torch.cuda.empty_cache() first)");
        }
        if (b.ptr != nullptr) {
          if (!nccl::may_free_on_grow(b.used_in_capture)) {
            b.kept.push_back(b.ptr);
          } else {
            // Freed in the caller's stream order, after the old buffer's last use (whose stream
            // may be gone by now).
            if (b.stream_set && b.stream != stream) {
              check(cudaStreamWaitEvent(stream, b.done, 0), "cudaStreamWaitEvent(owned buffer's last use)");
            }
            check(cudaFreeAsync(b.ptr, stream),
                  std::string("cudaFreeAsync(") + what + ", bytes=" + std::to_string(b.bytes) + ")");
          }
        }
        b.ptr = grown;
        b.bytes = bytes;
        check(cudaEventRecord(b.done, stream), "cudaEventRecord(owned buffer allocated)");
        b.stream = stream;
        b.stream_set = true;
        break;
      }
    }
    if (in_capture) b.used_in_capture = true;
    return b.ptr;
  }

  // Work on an owned buffer from a stream other than its last user's waits (on the device) for
  // that user's work. During capture no event is waited on or recorded: an event recorded
  // outside the graph cannot order graph replays (docs/gpu.md, "CUDA graphs").
  void order_use(DeviceBuffer& b, cudaStream_t stream) {
    if (capturing(stream)) {
      b.used_in_capture = true;
      return;
    }
    if (b.stream_set && stream != b.stream) {
      check(cudaStreamWaitEvent(stream, b.done, 0), "cudaStreamWaitEvent(owned buffer)");
    }
  }

  void record_use(DeviceBuffer& b, cudaStream_t stream) {
    if (capturing(stream)) return;
    check(cudaEventRecord(b.done, stream), "cudaEventRecord(owned buffer)");
    b.stream = stream;
    b.stream_set = true;
  }

  static constexpr const char* kRequest = "a nonblocking device operation (the work enqueued on its stream)";
  // Enough for every tensor of a large model in flight at once; beyond it events are destroyed.
  static constexpr std::size_t kSpareRequestEvents = 4096;

  // Caller holds comm_.guard().
  void give_back(cudaEvent_t e) noexcept {
    if (!requests_.give_back(e)) (void)cudaEventDestroy(e);
  }

  int device_;
  nccl::Comm comm_;
  nccl::HandlePool<cudaEvent_t> requests_{kSpareRequestEvents};
  DeviceBuffer fusion_;
  cudaStream_t own_ = nullptr;  // own_stream(): nonblocking calls communicate here
  DeviceBuffer scratch_;
};

}  // namespace

std::string nccl_backend_description(const Config& config) {
  const nccl::Library& lib = nccl::library(config.nccl);
  if (!lib.ok) return "no NCCL: " + lib.error;
  return "NCCL " + nccl::version_string(lib.version) + " from " + lib.path +
         " (its communicator is created at the first device collective, on that buffer's device)";
}

int nccl_library_version(const Config& config, std::string* why) {
  // The search runs now unless a communicator already ran it: the process keeps the first result.
  const nccl::Library& lib = nccl::library(config.nccl);
  if (!lib.ok) *why = lib.error;
  return lib.ok ? lib.version : 0;
}

void check_devices_per_host(MPI_Comm comm, const Config& config) {
  nccl::VisibleDevices mine;
  mine.host_hash = this_host(config.nccl);
  std::snprintf(mine.host, sizeof mine.host, "%s", hostname().c_str());
  mine.count = cuda::device_count();
  for (int d = 0; d < mine.count && d < nccl::VisibleDevices::kMaxDevices; ++d) {
    // Context-free: asks the driver, creates no context on any device.
    if (cudaDeviceGetPCIBusId(mine.bus_ids[d], sizeof mine.bus_ids[d], d) != cudaSuccess) {
      (void)cudaGetLastError();
      std::snprintf(mine.bus_ids[d], sizeof mine.bus_ids[d], "device %d", d);
    }
  }
  int size = 1;
  mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  std::vector<nccl::VisibleDevices> all(static_cast<std::size_t>(size));
  mpi_check(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, comm),
            "MPI_Allgather(devices per host)");
  if (nccl::too_many_ranks(all, 0, false).empty()) return;  // enough devices on every host
  // Only a loadable NCCL makes this an error: without one, device buffers say so when used.
  const nccl::Library& lib = nccl::library(config.nccl);
  if (!lib.ok) return;
  if (const std::string why = nccl::too_many_ranks(all, lib.version, config.nccl.multi_rank_gpu); !why.empty()) {
    throw Error(gjUnsupported, "gjCommInit: " + why);
  }
}

std::unique_ptr<Backend> make_nccl_backend(MPI_Comm comm, int device, const Config& config) {
  DeviceScope scope(device);  // NCCL initializes on the current device; the caller's is restored
  return std::make_unique<NcclBackend>(comm, device, config);
}

}  // namespace gj
