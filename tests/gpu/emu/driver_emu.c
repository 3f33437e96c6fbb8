/* The emulated driver library (libcuda.so.1): what another CUDA runtime in the process (torch's)
 * loaded to allocate device memory. Only the pointer query the library asks the driver directly
 * where its own runtime cannot use the driver (collectives/src/cuda/device.cpp); it answers from
 * the emulation's memory table (cuda_emu.cpp). A test dlopen()s it to model "the driver is loaded". */
#include <cuda.h>

CUresult gjemu_driver_cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr);

CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  return gjemu_driver_cuPointerGetAttribute(data, attribute, ptr);
}
