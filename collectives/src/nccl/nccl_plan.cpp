#include "nccl_plan.h"

#include "../dtype.h"
#include "../error.h"

namespace gj::nccl {

ncclDataType_t to_nccl(gjDataType_t dtype) {
  switch (dtype) {
    case gjFloat32: return ncclFloat32;
    case gjFloat64: return ncclFloat64;
    case gjFloat16: return ncclFloat16;
    case gjBfloat16: return ncclBfloat16;
    case gjInt32: return ncclInt32;
    case gjInt64: return ncclInt64;
    case gjUint8: return ncclUint8;
    default: break;
  }
  throw Error(gjInvalidArgument, "NCCL backend: dtype=" + std::to_string(dtype) + " is not a gjDataType_t");
}

bool is_floating(gjDataType_t dtype) {
  return dtype == gjFloat32 || dtype == gjFloat64 || dtype == gjFloat16 || dtype == gjBfloat16;
}

AllreducePlan plan_allreduce(gjDataType_t dtype, gjRedOp_t op, int nranks) {
  if (nranks < 1) throw Error(gjInternalError, "plan_allreduce: nranks=" + std::to_string(nranks));
  AllreducePlan p{to_nccl(dtype), ncclSum};
  switch (op) {
    case gjSum: p.op = ncclSum; return p;
    case gjMin: p.op = ncclMin; return p;
    case gjMax: p.op = ncclMax; return p;
    case gjProd: p.op = ncclProd; return p;
    case gjAvg:
      if (!is_floating(dtype)) {
        if (nranks > 1) p.postdivide = nranks;
      } else if ((nranks & (nranks - 1)) == 0) {
        p.op = ncclAvg;
      } else {
        p.prescale = 1.0 / nranks;
      }
      return p;
    default: break;
  }
  throw Error(gjInvalidArgument, "NCCL backend: op=" + std::to_string(op) + " is not a gjRedOp_t");
}

const char* op_name(gjRedOp_t op) {
  switch (op) {
    case gjSum: return "sum";
    case gjAvg: return "avg";
    case gjMin: return "min";
    case gjMax: return "max";
    case gjProd: return "prod";
    default: return "?";
  }
}

std::string describe(const Operation& op) {
  std::string s = std::string(op.call) + "(count=" + std::to_string(op.count) + ", dtype=" + dtype_name(op.dtype);
  if (op.root >= 0) s += ", root=" + std::to_string(op.root);
  if (op.root == Operation::kReduction) s += std::string(", op=") + op_name(op.op);
  return s + ")";
}

}  // namespace gj::nccl
