// The stall kernel (stall_kernel.h) for the emulated device runtime: a stream task that spins
// until the host writes a non-zero value into the flag.
#include <atomic>
#include <thread>

#include "../stall_kernel.h"
#include "cuda_emu.h"

namespace gj::test {

cudaError_t launch_stall(int* device_flag, cudaStream_t stream) {
  volatile int* flag = device_flag;
  (void)gjemu::launch(stream, [flag] {
    while (*flag == 0) std::this_thread::yield();
  }, "stall");
  return cudaGetLastError();
}

}  // namespace gj::test
