// The NCCL backend: device buffers, stream-ordered collectives on the caller's stream.
//
// Nothing here waits for the GPU on the normal path. The backend waits (polling NCCL's
// asynchronous error state, bounded by GJ_COLL_TIMEOUT_MS) only where it must: before freeing a
// fusion buffer that is being replaced by a larger one, and at destruction (ncclCommFinalize)
// for the NCCL operations it enqueued. Fusion-buffer reuse from another stream is ordered on the device with an event.
#include "nccl_backend.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>

#include "../cuda/batched_copy.h"
#include "../cuda/check.h"
#include "../cuda/device.h"
#include "../cuda/elementwise.h"
#include "../error.h"
#include "nccl_comm.h"
#include "nccl_plan.h"

namespace gj {
namespace {

using cuda::check;

// Makes the backend's device current for the duration of a call and restores the caller's.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    check(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) check(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
  }
  ~DeviceScope() {
    int now = previous_;
    if (cudaGetDevice(&now) == cudaSuccess && now != previous_) (void)cudaSetDevice(previous_);
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

int select_device(int local_rank) {
  const int n = cuda::device_count();
  if (n == 0) {
    throw Error(gjUnsupported,
                "make_nccl_backend: no CUDA device is visible to this process (cudaGetDeviceCount=0; "
                "check CUDA_VISIBLE_DEVICES and the driver), so device buffers cannot use NCCL");
  }
  return local_rank % n;
}

class NcclBackend final : public Backend {
 public:
  NcclBackend(MPI_Comm comm, int local_rank, const Config& config)
      : device_(agree_on_device(comm, local_rank)), comm_(make_current(device_, comm), config.timeout_ms) {
    fusion_done_ = make_event();
  }

  ~NcclBackend() override {
    // A destructor can only report: every failure goes to stderr (a failing wait has aborted
    // the communicator).
    try {
      DeviceScope scope(device_);
      // Waits, bounded by the timeout, until every enqueued NCCL operation has completed; the
      // kernels around them (pack, scale, divide, unpack) then finish on their own.
      comm_.finalize();
      if (!comm_.aborted() && fusion_ != nullptr) check(cudaFree(fusion_), "cudaFree(fusion buffer)");
      // After an abort the fusion buffer is left to process exit: freeing it synchronizes the
      // device, which could block on work that never finishes.
      (void)cudaEventDestroy(fusion_done_);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gj collectives: NCCL backend teardown: %s\n", e.what());
    }
  }

  gjBackend_t kind() const override { return gjBackendNccl; }

  void allreduce(const void* send, void* recv, std::size_t count, gjDataType_t dtype, gjRedOp_t op,
                 void* stream_v) override {
    const nccl::Operation what{"ncclAllReduce", count, dtype, op, nccl::Operation::kReduction};
    comm_.ensure_usable(what.call);
    if (count == 0) return;
    DeviceScope scope(device_);
    const auto stream = static_cast<cudaStream_t>(stream_v);
    const nccl::AllreducePlan plan = nccl::plan_allreduce(dtype, op, comm_.size());
    const bool fused = in_fusion(send) || in_fusion(recv);
    if (fused) order_fusion_use(stream);
    if (plan.prescale != 0.0) {
      cuda::scale(recv, send, count, dtype, plan.prescale, stream);
      send = recv;
    }
    comm_.complete_lazy(ncclAllReduce(send, recv, count, plan.dtype, plan.op, comm_.get(), stream),
                        [&] { return nccl::describe(what); });
    if (plan.postdivide != 0) cuda::divide(recv, count, dtype, plan.postdivide, stream);
    if (fused) record_fusion_use(stream);
  }

  void broadcast(void* buf, std::size_t count, gjDataType_t dtype, int root, void* stream_v) override {
    const nccl::Operation what{"ncclBroadcast", count, dtype, gjSum, root};
    comm_.ensure_usable(what.call);
    if (count == 0) return;
    DeviceScope scope(device_);
    const auto stream = static_cast<cudaStream_t>(stream_v);
    comm_.complete_lazy(ncclBroadcast(buf, buf, count, nccl::to_nccl(dtype), root, comm_.get(), stream),
                        [&] { return nccl::describe(what); });
  }

  void* fusion_buffer(std::size_t bytes) override {
    comm_.ensure_usable("fusion_buffer");
    if (bytes <= fusion_bytes_ && fusion_ != nullptr) return fusion_;
    DeviceScope scope(device_);
    // The old buffer may still be read by enqueued work: wait for its last use, then replace it.
    if (fusion_ != nullptr) {
      comm_.wait(fusion_done_, "the last use of the fusion buffer (before growing it to " +
                                   std::to_string(bytes) + " bytes)");
      check(cudaFree(fusion_), "cudaFree(fusion buffer, bytes=" + std::to_string(fusion_bytes_) + ")");
      fusion_ = nullptr;
      fusion_bytes_ = 0;
    }
    check(cudaMalloc(&fusion_, bytes), "cudaMalloc(fusion buffer, bytes=" + std::to_string(bytes) +
                                           "; lower GJ_COLL_FUSION_BYTES)");
    fusion_bytes_ = bytes;
    fusion_stream_set_ = false;
    return fusion_;
  }

  void pack(void* dst, const void* const* srcs, const std::size_t* bytes, int n, void* stream_v) override {
    comm_.ensure_usable("pack");
    DeviceScope scope(device_);
    const auto stream = static_cast<cudaStream_t>(stream_v);
    const bool fused = in_fusion(dst);
    if (fused) order_fusion_use(stream);
    cuda::pack(dst, srcs, bytes, n, stream);
    if (fused) record_fusion_use(stream);
  }

  void unpack(void* const* dsts, const void* src, const std::size_t* bytes, int n, void* stream_v) override {
    comm_.ensure_usable("unpack");
    DeviceScope scope(device_);
    const auto stream = static_cast<cudaStream_t>(stream_v);
    const bool fused = in_fusion(src);
    if (fused) order_fusion_use(stream);
    cuda::unpack(dsts, src, bytes, n, stream);
    if (fused) record_fusion_use(stream);
  }

  void abort() noexcept override { comm_.abort(); }

 private:
  // Every rank must find a device before any of them enters ncclCommInitRank, or the ranks that
  // did would wait there for the ones that did not.
  static int agree_on_device(MPI_Comm comm, int local_rank) {
    int local_ok = 1;
    std::string local_error;
    int device = 0;
    try {
      device = select_device(local_rank);
    } catch (const Error& e) {
      local_ok = 0;
      local_error = e.what();
    }
    int all_ok = 0;
    const int rc = MPI_Allreduce(&local_ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
    if (rc != MPI_SUCCESS) throw Error(gjMpiError, "MPI_Allreduce(device check before NCCL init) failed");
    if (!local_ok) throw Error(gjUnsupported, local_error);
    if (!all_ok) {
      throw Error(gjUnsupported, "make_nccl_backend: another rank has no usable CUDA device, so no rank "
                                 "can use NCCL (see that rank's error)");
    }
    return device;
  }

  // The selected device stays current on the creating thread: the NCCL communicator is bound to
  // it, and the training code's tensors must live there anyway.
  static MPI_Comm make_current(int device, MPI_Comm comm) {
    check(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
    return comm;
  }

  bool in_fusion(const void* p) const {
    const auto* c = static_cast<const char*>(p);
    const auto* f = static_cast<const char*>(fusion_);
    return fusion_ != nullptr && c >= f && c < f + fusion_bytes_;
  }

  // Work on the fusion buffer from a stream other than its last user's waits (on the device)
  // for that user's work.
  void order_fusion_use(cudaStream_t stream) {
    if (fusion_stream_set_ && stream != fusion_stream_) {
      check(cudaStreamWaitEvent(stream, fusion_done_, 0), "cudaStreamWaitEvent(fusion buffer)");
    }
  }

  void record_fusion_use(cudaStream_t stream) {
    check(cudaEventRecord(fusion_done_, stream), "cudaEventRecord(fusion buffer)");
    fusion_stream_ = stream;
    fusion_stream_set_ = true;
  }

  int device_;
  nccl::Comm comm_;
  void* fusion_ = nullptr;
  std::size_t fusion_bytes_ = 0;
  cudaEvent_t fusion_done_ = nullptr;
  cudaStream_t fusion_stream_ = nullptr;
  bool fusion_stream_set_ = false;
};

}  // namespace

std::unique_ptr<Backend> make_nccl_backend(MPI_Comm comm, int local_rank, const Config& config) {
  return std::make_unique<NcclBackend>(comm, local_rank, config);
}

}  // namespace gj
