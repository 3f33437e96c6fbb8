// A kernel that holds a stream until the host writes a non-zero value into a host-mapped flag:
// the stalled peer of the watchdog test.
#include <cuda_runtime.h>

#include "stall_kernel.h"

namespace {

__global__ void stall(volatile int* flag) {
  while (*flag == 0) {
  }
}

}  // namespace

namespace gj::test {

cudaError_t launch_stall(int* device_flag, cudaStream_t stream) {
  stall<<<1, 1, 0, stream>>>(device_flag);
  return cudaGetLastError();
}

}  // namespace gj::test
