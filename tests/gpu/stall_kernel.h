#pragma once

#include <cuda_runtime_api.h>

namespace gj::test {

// Launches one thread spinning until *device_flag != 0 (a host-mapped int).
cudaError_t launch_stall(int* device_flag, cudaStream_t stream);

}  // namespace gj::test
