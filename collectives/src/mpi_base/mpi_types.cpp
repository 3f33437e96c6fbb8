#include "mpi_base/mpi_types.h"

#include "mpi_base/mpi_check.h"
#include "host/reduce.h"

namespace gj {
namespace {

// MPI's signature: inout[i] = in[i] op inout[i]; all our ops are commutative.
template <gjDataType_t D, gjRedOp_t O>
void half_op(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  host::reduce_into(inout, in, static_cast<std::size_t>(*len), D, O);
}

template <gjDataType_t D>
MPI_User_function* half_fn(gjRedOp_t op) {
  switch (op) {
    case gjMin: return &half_op<D, gjMin>;
    case gjMax: return &half_op<D, gjMax>;
    case gjProd: return &half_op<D, gjProd>;
    default: return &half_op<D, gjSum>;  // gjSum, gjAvg (pre-scaled)
  }
}

}  // namespace

MpiTypes::MpiTypes() {
  mpi_check(MPI_Type_contiguous(2, MPI_BYTE, &half_), "MPI_Type_contiguous(2, MPI_BYTE)");
  mpi_check(MPI_Type_commit(&half_), "MPI_Type_commit(16-bit type)");
  for (int o = 0; o < gjNumRedOps; ++o) {
    const auto op = static_cast<gjRedOp_t>(o);
    mpi_check(MPI_Op_create(half_fn<gjFloat16>(op), 1, &half_ops_[0][o]), "MPI_Op_create(f16)");
    mpi_check(MPI_Op_create(half_fn<gjBfloat16>(op), 1, &half_ops_[1][o]), "MPI_Op_create(bf16)");
  }
}

MpiTypes::~MpiTypes() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (auto& per_type : half_ops_) {
    for (MPI_Op& op : per_type) {
      if (op != MPI_OP_NULL) MPI_Op_free(&op);
    }
  }
  if (half_ != MPI_DATATYPE_NULL) MPI_Type_free(&half_);
}

MPI_Datatype MpiTypes::datatype(gjDataType_t dtype) const {
  switch (dtype) {
    case gjFloat32: return MPI_FLOAT;
    case gjFloat64: return MPI_DOUBLE;
    case gjInt32: return MPI_INT32_T;
    case gjInt64: return MPI_INT64_T;
    case gjUint8: return MPI_UINT8_T;
    default: return half_;
  }
}

MPI_Op MpiTypes::op(gjDataType_t dtype, gjRedOp_t op) const {
  if (dtype == gjFloat16 || dtype == gjBfloat16) {
    return half_ops_[dtype == gjFloat16 ? 0 : 1][op];
  }
  switch (op) {
    case gjMin: return MPI_MIN;
    case gjMax: return MPI_MAX;
    case gjProd: return MPI_PROD;
    default: return MPI_SUM;
  }
}

}  // namespace gj
