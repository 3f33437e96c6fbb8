// A device buffer the backend owns (the fusion buffer, the scratch of scaled reduce-scatter):
// grown on demand, never shrunk, with the ordering that reuse across streams and CUDA graph
// capture need. plan_buffer_use is the pure decision; DeviceBuffer (nccl_backend.cpp) acts on it.
#pragma once

#include <cstddef>

namespace gj::nccl {

enum class BufferAction {
  Reuse,         // big enough: use it as it is
  Grow,          // not in capture: wait for its last use, free it (unless captured), allocate
  RefuseCapture  // in capture and too small: allocating (and freeing) there is not allowed
};

// capturing: the caller's stream is being captured into a CUDA graph.
BufferAction plan_buffer_use(std::size_t have_bytes, bool allocated, std::size_t need_bytes, bool capturing);

// After a buffer was used inside a capture, instantiated graphs may reference it for as long
// as they live: growing it later keeps the old allocation (freed at communicator destruction)
// instead of freeing it.
inline bool may_free_on_grow(bool used_in_capture) { return !used_in_capture; }

}  // namespace gj::nccl
