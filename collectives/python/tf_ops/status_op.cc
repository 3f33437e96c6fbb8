// GjStatus(code, message, values...) -> values...: gj.tensorflow's graph ops end in it, so a
// collective's failure reaches Session.run / a tf.function's caller as the TensorFlow error class
// Horovod's ops raise (FailedPrecondition, InvalidArgument). A numpy_function callback cannot do
// that itself: TensorFlow reports its exceptions by Python type (UnknownError for gj's).
// code 0 passes the values through (no copy); any other code fails the op with Status(code, message).
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace {

using tensorflow::OpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;

class GjStatusOp : public OpKernel {
 public:
  explicit GjStatusOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* c) override {
    const int code = c->input(0).scalar<tensorflow::int32>()();
    if (code != 0) {
      c->SetStatus(absl::Status(static_cast<absl::StatusCode>(code),
                                std::string(c->input(1).scalar<tensorflow::tstring>()())));
      return;
    }
    for (int i = 2; i < c->num_inputs(); ++i) c->set_output(i - 2, c->input(i));
  }
};

}  // namespace

REGISTER_OP("GjStatus")
    .Input("code: int32")
    .Input("message: string")
    .Input("values: T")
    .Output("out: T")
    .Attr("T: list(type) >= 0")
    .SetIsStateful()
    .SetShapeFn([](tensorflow::shape_inference::InferenceContext* c) {
      for (int i = 2; i < c->num_inputs(); ++i) c->set_output(i - 2, c->input(i));
      return absl::OkStatus();
    });

REGISTER_KERNEL_BUILDER(Name("GjStatus").Device(tensorflow::DEVICE_CPU), GjStatusOp);
