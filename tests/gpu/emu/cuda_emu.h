// The emulated CUDA runtime's own interface (libgj_cuda_emu.so), for the parts of the emulation
// that are not the CUDA runtime API itself: the emulated kernels (kernels_emu.cpp) and the test
// NCCL (nccl_emu.cpp) enqueue host work on an emulated stream, and the test NCCL asks which
// emulated node and PCI bus a device is. The CUDA runtime API functions the backend calls are
// defined in cuda_emu.cpp with their real names (the link-time seam: docs/gpu.md, "Emulation").
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace gjemu {

// Enqueues work on stream (nullptr / cudaStreamLegacy: the current device's legacy stream), as a
// kernel launch would: refused (cudaErrorInvalidResourceHandle) when the stream belongs to
// another device than the calling thread's current one; recorded into the graph when the
// stream is capturing. The error is also the thread's last error, as a failed launch is.
cudaError_t launch(cudaStream_t stream, std::function<void()> work, const char* what);

// The device the calling thread has current.
int current_device();

// Device memory allocated by another CUDA runtime in the process (torch's), through the driver:
// works whatever GJ_EMU_DRIVER_VERSION says, and the runtime's queries do not see it then.
void* foreign_alloc(int device, std::size_t bytes);

// The devices whose primary context this process has created (sorted).
std::vector<int> context_devices();

// The device p is memory of (cudaMalloc), or -1 for memory the emulation did not allocate.
int device_of(const void* p);

// This process's emulated node (GJ_EMU_RANKS_PER_NODE ranks per node, by the launcher's rank).
int node();

// "0000:NN:00.0": unique per (node, device), so ranks on different emulated nodes never share one.
std::string pci_bus_id(int device);

}  // namespace gjemu
