// gj.tensorflow's op definitions (gj/tensorflow/mpi_ops.py makes them; host_kernels.cc runs
// them). Every op is stateful, so tf.function's automatic control dependencies keep them in
// program order (the issue order gj's agreement needs). Attributes every collective has:
//   process_set_id  the set (comms.h); signature  the call's fields as text (record.h: the
//   hash every rank compares, and the disagreement's message); what  the API call's name.
#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace {

using tensorflow::shape_inference::InferenceContext;
using tensorflow::shape_inference::ShapeHandle;

#define GJ_COMMON_ATTRS \
  Attr("process_set_id: int").Attr("signature: string").Attr("what: string")
#define GJ_REDUCIBLE "{float, double, half, bfloat16, int32, int64, uint8}"

absl::Status same_shapes(InferenceContext* c) {
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, c->input(i));
  return absl::OkStatus();
}

// The first dimension unknown (it depends on the other ranks), the rest the input's.
absl::Status rows_unknown(InferenceContext* c) {
  for (int i = 0; i < c->num_inputs() && i < c->num_outputs(); ++i) {
    ShapeHandle rest, out;
    if (c->RankKnown(c->input(i)) && c->Rank(c->input(i)) > 0) {
      TF_RETURN_IF_ERROR(c->Subshape(c->input(i), 1, &rest));
      TF_RETURN_IF_ERROR(c->Concatenate(c->Vector(InferenceContext::kUnknownDim), rest, &out));
      c->set_output(i, out);
    } else {
      c->set_output(i, c->UnknownShape());
    }
  }
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("GjAllreduce")
    .Input("tensor: T")
    .Output("out: T")
    .Attr("T: " GJ_REDUCIBLE)
    .Attr("reduce_op: int")
    .Attr("prescale: int")  // the factors' float64 bits: TensorFlow's float attrs are 32-bit
    .Attr("postscale: int")
    .GJ_COMMON_ATTRS
    .SetIsStateful()
    .SetShapeFn(same_shapes);

REGISTER_OP("GjGroupedAllreduce")
    .Input("tensors: T")
    .Output("outs: T")
    .Attr("T: list(" GJ_REDUCIBLE ") >= 1")
    .Attr("reduce_op: int")
    .Attr("prescale: int")  // the factors' float64 bits: TensorFlow's float attrs are 32-bit
    .Attr("postscale: int")
    .GJ_COMMON_ATTRS
    .SetIsStateful()
    .SetShapeFn(same_shapes);

REGISTER_OP("GjAllgather")
    .Input("tensor: T")
    .Output("out: T")
    .Attr("T: type")
    .GJ_COMMON_ATTRS
    .SetIsStateful()
    .SetShapeFn(rows_unknown);

REGISTER_OP("GjBroadcast")
    .Input("tensor: T")
    .Output("out: T")
    .Attr("T: type")
    .Attr("root: int")  // the root's rank in the set (the signature names its global rank)
    .GJ_COMMON_ATTRS
    .SetIsStateful()
    .SetShapeFn(same_shapes);

REGISTER_OP("GjAlltoall")
    .Input("tensor: T")
    .Input("splits: int32")  // empty: an even split of dimension 0
    .Output("out: T")
    .Output("received_splits: int32")
    .Attr("T: type")
    .GJ_COMMON_ATTRS
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      TF_RETURN_IF_ERROR(rows_unknown(c));
      c->set_output(1, c->Vector(InferenceContext::kUnknownDim));
      return absl::OkStatus();
    });

REGISTER_OP("GjReducescatter")
    .Input("tensors: T")
    .Output("outs: T")
    .Attr("T: list(" GJ_REDUCIBLE ") >= 1")
    .Attr("reduce_op: int")
    .Attr("prescale: int")  // the factors' float64 bits: TensorFlow's float attrs are 32-bit
    .Attr("postscale: int")
    .GJ_COMMON_ATTRS
    .SetIsStateful()
    .SetShapeFn(rows_unknown);

REGISTER_OP("GjAdasum")
    .Input("tensor: T")
    .Output("out: T")
    .Attr("T: {float, double, half}")
    .GJ_COMMON_ATTRS
    .SetIsStateful()
    .SetShapeFn(same_shapes);
