// The one device-specific layer of gj.tensorflow's GPU kernels: TensorFlow's compute stream for
// the op's device (the library's NCCL calls are enqueued on it, as gj.torch enqueues them on
// torch's current stream) and a copy on it. Nothing here needs the CUDA toolkit: the stream is
// StreamExecutor's, reached through virtual calls of the headers of the TensorFlow it is built
// against (docs/tensorflow.md, "GPU tensors", says what that means for a GPU TensorFlow).
#ifndef GJ_TF_OPS_DEVICE_H_
#define GJ_TF_OPS_DEVICE_H_

#include "kernel_base.h"

namespace gj_tf {

// The op's device and its compute stream (a cudaStream_t for the library).
Place device_place(OpKernelContext* ctx);
// dst <- src (bytes, both on the op's device), enqueued on the compute stream.
absl::Status device_copy(OpKernelContext* ctx, void* dst, const void* src, size_t bytes);

}  // namespace gj_tf

#endif
