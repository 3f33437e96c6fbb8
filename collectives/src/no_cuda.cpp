// gj::cuda for builds without the CUDA part (src/cuda): no device, every pointer is host memory.
#include "cuda/device.h"

namespace gj::cuda {

int device_count() noexcept { return 0; }
bool is_device_pointer(const void* /*p*/) { return false; }

}  // namespace gj::cuda
