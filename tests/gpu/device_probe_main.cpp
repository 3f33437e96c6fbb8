// gj::cuda::device_count / is_device_pointer where no device may be used. Run by ctest
// - with CUDA_VISIBLE_DEVICES=-1 (every device hidden): asserts the same on GPU machines and here;
// - with --no-driver: on a machine without the NVIDIA driver (skips, 77, where one is loaded).
// Exit 0 = as expected, 1 = a wrong answer (printed), 77 = skipped.
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda/device.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--no-driver") == 0) {
    struct stat st{};
    if (stat("/proc/driver/nvidia/version", &st) == 0) {
      std::printf("SKIP cuda.device_count.no_driver: the NVIDIA driver is loaded on this machine\n");
      return 77;
    }
  }
  int failures = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) {
      std::fprintf(stderr, "FAIL: %s\n", what);
      ++failures;
    }
  };
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  std::printf("CUDA_VISIBLE_DEVICES=%s device_count()=%d\n", visible ? visible : "(unset)",
              gj::cuda::device_count());
  expect(gj::cuda::device_count() == 0, "device_count() == 0 (every device hidden, or no driver)");
  expect(gj::cuda::device_count() == 0, "device_count() == 0 again (the runtime's error was cleared)");
  int on_stack = 0;
  std::vector<char> on_heap(64);
  expect(!gj::cuda::is_device_pointer(nullptr), "is_device_pointer(nullptr) == false");
  expect(!gj::cuda::is_device_pointer(&on_stack), "is_device_pointer(stack) == false");
  expect(!gj::cuda::is_device_pointer(on_heap.data()), "is_device_pointer(heap) == false");
  return failures == 0 ? 0 : 1;
}
