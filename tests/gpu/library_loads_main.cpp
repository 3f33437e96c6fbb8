// The shared library, which links the CUDA runtime statically (and opens NCCL only when a device
// needs it), must load and answer on machines without a GPU driver (CPU-only jobs link it too). argv[1] = path of libgj_collectives.so.
// Exit 0 = loaded and answered, 1 = failure (printed).
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

#include "gj/collectives.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s /path/to/libgj_collectives.so\n", argv[0]);
    return 2;
  }
  // RTLD_NOW: every symbol must resolve now, not at the first call.
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "FAIL: dlopen(%s): %s\n", argv[1], dlerror());
    return 1;
  }
  using ErrorString = const char* (*)(gjResult_t);
  using TypeSize = size_t (*)(gjDataType_t);
  auto error_string = reinterpret_cast<ErrorString>(dlsym(lib, "gjGetErrorString"));
  auto type_size = reinterpret_cast<TypeSize>(dlsym(lib, "gjDataTypeSize"));
  if (error_string == nullptr || type_size == nullptr) {
    std::fprintf(stderr, "FAIL: dlsym(gjGetErrorString / gjDataTypeSize): %s\n", dlerror());
    return 1;
  }
  const char* s = error_string(gjNcclError);
  if (s == nullptr || std::strlen(s) == 0 || type_size(gjBfloat16) != 2) {
    std::fprintf(stderr, "FAIL: gjGetErrorString(gjNcclError)=\"%s\" gjDataTypeSize(gjBfloat16)=%zu\n",
                 s ? s : "(null)", type_size(gjBfloat16));
    return 1;
  }
  std::printf("loaded %s: gjGetErrorString(gjNcclError)=\"%s\"\n", argv[1], s);
  dlclose(lib);
  return 0;
}
