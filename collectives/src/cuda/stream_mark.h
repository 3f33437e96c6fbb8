// A point in a caller's CUDA stream that work on another stream can wait for on the device.
// A nonblocking call on device buffers marks the caller's stream when it is made (the producer's
// kernels queued so far), and the communicator's progress thread later makes the backend's own
// stream wait for that mark before the collective: the call returns without waiting for a peer,
// and the caller's later kernels do not queue behind communication. No CUDA headers (the core
// library includes this); stream_mark.cpp with CUDA, device_stub.cpp without.
#pragma once

namespace gj::cuda {

class StreamMark {
 public:
  // Records an event on `stream` (nullptr: the device's legacy default stream) with `device`
  // current for the call (its context exists: the caller's buffers live there). Throws
  // gj::Error: gjInvalidUsage while `stream` is being captured into a CUDA graph (the mark would
  // be a node of the graph, not a point of any replay), gjInvalidArgument when `stream` belongs
  // to another device (naming both), gjCudaError naming a failed runtime call.
  StreamMark(int device, void* stream, const char* call);
  ~StreamMark();
  StreamMark(const StreamMark&) = delete;
  StreamMark& operator=(const StreamMark&) = delete;

  // `stream` (of the same device) waits on the device for the mark; the calling thread gets
  // the mark's device current (a thread without a context elsewhere keeps it). Throws gjCudaError.
  void make_wait(void* stream) const;

 private:
  void* event_ = nullptr;
  int device_ = 0;
};

}  // namespace gj::cuda
