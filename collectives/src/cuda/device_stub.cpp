// Built without CUDA: no device is ever present, and no pointer is device memory.
#include "device.h"
#include "stream_mark.h"

#include <string>

#include "../error.h"

namespace gj::cuda {

int device_count() noexcept { return 0; }

std::string device_problem() { return ""; }

bool is_device_pointer(const void*) { return false; }

int pointer_device(const void*) { return -1; }

bool has_context(int) noexcept { return false; }

int current_device() noexcept { return 0; }

StreamMark::StreamMark(int, void*, const char* call) {
  throw Error(gjUnsupported, std::string(call) + ": this build of the library has no CUDA");
}
StreamMark::~StreamMark() = default;
void StreamMark::make_wait(void*) const {}

}  // namespace gj::cuda
