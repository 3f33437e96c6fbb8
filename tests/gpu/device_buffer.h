// Minimal RAII device allocation for the GPU tests and benchmark.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace gj::test {

inline void cuda_ok(cudaError_t err, const char* call) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(err));
}

class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    cuda_ok(cudaMalloc(&p_, bytes == 0 ? 1 : bytes), "cudaMalloc");
  }
  ~DeviceBuffer() { (void)cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  template <typename T = void>
  T* get(std::size_t byte_offset = 0) const {
    return reinterpret_cast<T*>(static_cast<char*>(p_) + byte_offset);
  }
  std::size_t bytes() const { return bytes_; }

  void upload(const void* src, std::size_t bytes, std::size_t offset = 0) {
    cuda_ok(cudaMemcpy(get<char>(offset), src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy(H2D)");
  }
  std::vector<unsigned char> download(std::size_t bytes, std::size_t offset = 0) const {
    std::vector<unsigned char> out(bytes);
    cuda_ok(cudaMemcpy(out.data(), get<char>(offset), bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(D2H)");
    return out;
  }

 private:
  void* p_ = nullptr;
  std::size_t bytes_;
};

}  // namespace gj::test
