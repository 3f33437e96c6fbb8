// A driver older than the library's CUDA runtime (emulation only: GJ_EMU_DRIVER_VERSION=12040,
// the runtime 13.0): the library's runtime sees no device (cudaErrorInsufficientDriver) while
// another runtime in the process (torch's cu12 build) allocated device memory through the
// driver, which is loaded (argv[1]: the emulated libcuda.so.1). A device buffer must fail with
// gjCudaError naming both versions and the fix, never be reduced as host memory (on a GPU the
// host backend would read it on the CPU: a segfault); host buffers keep working.
// Exit codes: 0 pass, 1 wrong behaviour (printed), 2 usage.
#include <dlfcn.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_emu.h"
#include "expect.h"
#include "gj/collectives.h"

using gj::test::expect;

namespace {

bool has(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

// The message is read after the call (an argument list's order is unspecified).
void expect_mismatch(gjResult_t r, gjComm_t comm, const std::string& what) {
  const std::string message = gjGetLastError(comm);
  expect(r == gjCudaError, what + ": gjCudaError expected, got " + gjGetErrorString(r) + ": " + message);
  for (const char* part : {"13.0", "12.4", "driver", "Fix"}) {
    expect(has(message, part), what + ": the message names \"" + part + "\": " + message);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <emulated libcuda.so.1>\n", argv[0]);
    return 2;
  }
  // Before the driver is loaded (no device memory can exist): the runtime's problem is known.
  int count = -1;
  expect_mismatch(gjCudaDevices(&count), nullptr, "gjCudaDevices");
  expect(count == 0, "gjCudaDevices: count 0, got " + std::to_string(count));
  if (dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    std::fprintf(stderr, "FAIL dlopen(%s): %s\n", argv[1], dlerror());
    return 1;
  }
  gjComm_t comm = nullptr;
  if (gjResult_t r = gjCommInitWorld(&comm); r != gjSuccess) {
    std::fprintf(stderr, "FAIL gjCommInitWorld: %s: %s\n", gjGetErrorString(r), gjGetLastError(nullptr));
    return 1;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &gj::test::g_rank);
  constexpr std::size_t n = 64;
  auto* device = static_cast<float*>(gjemu::foreign_alloc(0, n * sizeof(float)));
  for (std::size_t i = 0; i < n; ++i) device[i] = 1.0f;  // emulated device memory is host memory
  expect_mismatch(gjAllReduce(device, device, n, gjFloat32, gjSum, comm, nullptr), comm,
                  "gjAllReduce on a device buffer");
  expect(device[0] == 1.0f, "the device buffer untouched");
  gjRequest_t request = nullptr;
  expect_mismatch(gjIallReduce(device, device, n, gjFloat32, gjSum, 1.0, 1.0, comm, nullptr, &request), comm,
                  "gjIallReduce on a device buffer");
  expect(request == nullptr, "no request for the refused call");
  std::vector<float> host(n, 2.0f);
  const gjResult_t r = gjAllReduce(host.data(), host.data(), n, gjFloat32, gjSum, comm, nullptr);
  expect(r == gjSuccess, std::string("host buffers still reduce: ") + gjGetErrorString(r) + ": " + gjGetLastError(comm));
  int size = 1;
  gjCommSize(comm, &size);
  expect(host[n - 1] == 2.0f * static_cast<float>(size), "host allreduce exact");
  const int failures = gj::test::failures_on_all_ranks();
  gjCommDestroy(comm);
  gjFinalize();
  if (failures == 0 && gj::test::g_rank == 0) std::printf("old_driver: ok\n");
  return failures == 0 ? 0 : 1;
}
