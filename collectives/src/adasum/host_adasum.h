// Adasum allreduce of a host buffer over MPI (gjAllReduceAdasum).
#pragma once

#include <mpi.h>

#include <cstddef>

#include "gj/collectives.h"

namespace gj::adasum {

// recv = the Adasum of every rank's send (count elements of f32, f64, f16 or bf16), the same
// bits on every rank. comm's size must be a power of two (checked by the caller). send == recv
// is in place. Vector halving, distance doubling: at each level a rank swaps half its segment
// with rank ^ distance, the 2 * distance ranks that now hold pieces of the two vectors sum
// their pieces' dot product and squared norms (an XOR butterfly of 3 doubles: every member
// adds the same values in an order that gives the same bits), and each combines its piece
// (adasum_plan.h); then the halves travel back up. f32/f64 combine in their own type with
// double coefficients and double-accumulated dot products (as Horovod); f16/bf16 are widened
// to f32 once and rounded back once at the end (Horovod keeps f16 between levels).
void host_adasum(MPI_Comm comm, const void* send, void* recv, std::size_t count, gjDataType_t dtype);

}  // namespace gj::adasum
