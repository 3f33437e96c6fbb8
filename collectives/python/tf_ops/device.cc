#include "device.h"

#include "tensorflow/core/framework/device_base.h"
#include "xla/stream_executor/stream.h"

namespace gj_tf {

namespace {
stream_executor::Stream* stream_of(OpKernelContext* ctx) {
  const tensorflow::DeviceContext* dc = ctx->op_device_context();
  return dc == nullptr ? nullptr : dc->stream();
}
}  // namespace

Place device_place(OpKernelContext* ctx) {
  Place p;
  p.device = true;
  if (stream_executor::Stream* s = stream_of(ctx)) p.stream = s->platform_specific_handle().stream;
  return p;
}

absl::Status device_copy(OpKernelContext* ctx, void* dst, const void* src, size_t bytes) {
  stream_executor::Stream* s = stream_of(ctx);
  if (s == nullptr) return absl::InternalError("gj.tensorflow: the GPU op has no compute stream");
  stream_executor::DeviceAddressBase to(dst, bytes);
  const stream_executor::DeviceAddressBase from(const_cast<void*>(src), bytes);
  return s->MemcpyD2D(&to, from, bytes);
}

}  // namespace gj_tf
