// gj dtypes and ops -> MPI datatypes and ops. f16/bf16 have no MPI type: they travel as a
// 2-byte contiguous type reduced by user-defined commutative ops (gj::host::reduce_into,
// f32 accumulation, round to nearest even).
#pragma once

#include <mpi.h>

#include "gj/collectives.h"

namespace gj {

class MpiTypes {
 public:
  MpiTypes();  // creates the 16-bit type and ops; needs MPI initialized
  ~MpiTypes();
  MpiTypes(const MpiTypes&) = delete;
  MpiTypes& operator=(const MpiTypes&) = delete;

  MPI_Datatype datatype(gjDataType_t dtype) const;
  // gjAvg maps to the sum: callers pre-scale (floating) or divide afterwards (integers).
  MPI_Op op(gjDataType_t dtype, gjRedOp_t op) const;

 private:
  MPI_Datatype half_ = MPI_DATATYPE_NULL;
  MPI_Op half_ops_[2][gjNumRedOps] = {};  // [f16, bf16][op]
};

}  // namespace gj
