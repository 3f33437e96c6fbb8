#include "stream_mark.h"

#include <cuda_runtime_api.h>

#include <string>

#include "../error.h"
#include "check.h"
#include "device.h"

namespace gj::cuda {
namespace {

// `device` current for a scope; the previous one restored only where it has a context (making
// a device current creates one: device.h, has_context).
class Current {
 public:
  explicit Current(int device) {
    check(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) check(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
  }
  ~Current() {
    int now = previous_;
    if (cudaGetDevice(&now) == cudaSuccess && now != previous_ && has_context(previous_)) (void)cudaSetDevice(previous_);
  }
  Current(const Current&) = delete;
  Current& operator=(const Current&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace

StreamMark::StreamMark(int device, void* stream_v, const char* call) : device_(device) {
  const auto stream = static_cast<cudaStream_t>(stream_v);
  const Current current(device);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  check(cudaStreamIsCapturing(stream, &status), std::string(call) + ": cudaStreamIsCapturing");
  if (status != cudaStreamCaptureStatusNone) {
    throw Error(gjInvalidUsage, std::string(call) +
                                    ": a nonblocking operation on device buffers cannot be issued during CUDA graph "
                                    "capture (its request would complete with the capture, not with a replay); "
                                    "capture the blocking call and synchronize on the graph launch's stream");
  }
  if (stream != nullptr && stream != cudaStreamLegacy && stream != cudaStreamPerThread) {
    int on = -1;
    check(cudaStreamGetDevice(stream, &on), std::string(call) + ": cudaStreamGetDevice");
    if (on != device) {
      throw Error(gjInvalidArgument, std::string(call) + ": stream belongs to CUDA device " + std::to_string(on) +
                                         " but the buffers are on device " + std::to_string(device) +
                                         "; pass a stream of the buffers' device (torch.cuda.current_stream(tensor.device))");
    }
  }
  cudaEvent_t e = nullptr;
  check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), std::string(call) + ": cudaEventCreateWithFlags");
  if (const cudaError_t r = cudaEventRecord(e, stream); r != cudaSuccess) {
    (void)cudaEventDestroy(e);
    throw_cuda_error(r, std::string(call) + ": cudaEventRecord(the caller's stream)");
  }
  event_ = e;
}

StreamMark::~StreamMark() {
  // Destroying an event that a stream still waits for is allowed: its resources go when done.
  if (event_ != nullptr) (void)cudaEventDestroy(static_cast<cudaEvent_t>(event_));
}

void StreamMark::make_wait(void* stream) const {
  const Current current(device_);
  check(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event_), 0),
        "cudaStreamWaitEvent(the backend's stream, the caller's stream)");
}

}  // namespace gj::cuda
