// Pure mapping from the library's (dtype, op) to what the NCCL backend enqueues, so that device
// results follow gj/collectives.h exactly where NCCL's own arithmetic differs:
// - gjAvg on floats with a power-of-two rank count: ncclAvg (NCCL pre-multiplies by 1/n, which is
//   exact then, so it equals divide-then-sum).
// - gjAvg on floats otherwise: a pre-scale kernel rounding x * (1/n) like the MPI backend, then
//   ncclSum (ncclAvg would multiply by 1/n rounded to the 16-bit type for f16/bf16).
// - gjAvg on integers: ncclSum (wrapping), then a truncating division kernel (NCCL's integer
//   average is defined for unsigned types only).
#pragma once

#include <nccl.h>

#include <string>

#include "gj/collectives.h"

namespace gj::nccl {

struct AllreducePlan {
  ncclDataType_t dtype;
  ncclRedOp_t op;
  double prescale = 0.0;  // != 0: recv = send * prescale (device kernel) before the collective
  int postdivide = 0;     // != 0: recv /= postdivide (device kernel) after the collective
};

// Throws gj::Error(gjInvalidArgument) for values outside the enums (api.cpp validates first).
ncclDataType_t to_nccl(gjDataType_t dtype);
AllreducePlan plan_allreduce(gjDataType_t dtype, gjRedOp_t op, int nranks);

bool is_floating(gjDataType_t dtype);
const char* op_name(gjRedOp_t op);

// An enqueued operation, kept as values so that the fast path builds no strings; describe()
// names it in error messages: "ncclAllReduce(count=1024, dtype=bf16, op=avg)".
struct Operation {
  const char* call;
  std::size_t count;
  gjDataType_t dtype;
  gjRedOp_t op;  // named when root == kReduction
  int root;      // broadcast's root, or kReduction, or kCopy (neither op nor root named)
  static constexpr int kReduction = -1;
  static constexpr int kCopy = -2;
};
std::string describe(const Operation& op);

}  // namespace gj::nccl
