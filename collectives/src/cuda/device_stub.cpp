// Built without CUDA: no device is ever present, and no pointer is device memory.
#include "device.h"

namespace gj::cuda {

int device_count() noexcept { return 0; }

std::string device_problem() { return ""; }

bool is_device_pointer(const void*) { return false; }

int pointer_device(const void*) { return -1; }

bool has_context(int) noexcept { return false; }

int current_device() noexcept { return 0; }

}  // namespace gj::cuda
