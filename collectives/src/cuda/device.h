// What the core library needs to know about CUDA, without including CUDA headers.
// Implemented in device.cpp when built with CUDA; device_stub.cpp otherwise (no device).
#pragma once

#include <string>

namespace gj::cuda {

// Number of usable devices; 0 when built without CUDA, when no driver or no device is present.
int device_count() noexcept;

// Why device buffers cannot be used although a driver is installed, "" otherwise (devices
// usable, or no driver/no device at all): the library's own CUDA runtime cannot use the driver
// (an older driver than the toolkit gj was built with), naming both versions and the fix.
std::string device_problem();

// True when p is device (or managed) memory. False for host memory and without CUDA. A failing
// cudaPointerGetAttributes throws gj::Error(gjCudaError): guessing "host" would hand a device
// pointer to MPI, which then crashes. Where the library's runtime cannot use the installed
// driver (device_problem()), memory the loaded driver calls device memory throws gjCudaError
// naming the mismatch.
bool is_device_pointer(const void* p);

// The device p was allocated on (device or managed memory), -1 for host memory; throws like
// is_device_pointer.
int pointer_device(const void* p);

// Whether device's primary context exists (true where the driver cannot say). Making a device
// current creates its context (cudaSetDevice, CUDA >= 12): a device without one is not made
// current again just to restore it.
bool has_context(int device) noexcept;

// The calling thread's current device (cudaGetDevice: no context created); 0 on failure.
int current_device() noexcept;

}  // namespace gj::cuda
