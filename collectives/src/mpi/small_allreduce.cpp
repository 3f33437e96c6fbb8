#include "mpi/small_allreduce.h"

#include <string>

#include "dtype.h"
#include "host/reduce.h"
#include "mpi_base/mpi_check.h"
#include "mpi_base/mpi_wait.h"

namespace gj {
namespace {

// A tag of its own: no other message of the library's communicators uses it.
constexpr int kTag = 0x6a72;

}  // namespace

void small_allreduce(void* buf, std::size_t count, gjDataType_t dtype, gjRedOp_t op, MPI_Comm comm, int rank,
                     int size, std::vector<unsigned char>& scratch) {
  const int bytes = static_cast<int>(count * dtype_size(dtype));
  if (scratch.size() < static_cast<std::size_t>(bytes)) scratch.resize(static_cast<std::size_t>(bytes));
  for (int d = 1; d < size; d <<= 1) {
    const int partner = rank ^ d;
    MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int rc = MPI_Irecv(scratch.data(), bytes, MPI_BYTE, partner, kTag, comm, &reqs[0]);
    if (rc == MPI_SUCCESS) rc = MPI_Isend(buf, bytes, MPI_BYTE, partner, kTag, comm, &reqs[1]);
    if (rc == MPI_SUCCESS) rc = wait_all_polled(2, reqs);
    if (rc != MPI_SUCCESS) {
      mpi_check(rc, "small allreduce: MPI_Irecv/MPI_Isend with rank " + std::to_string(partner) +
                        " (bytes=" + std::to_string(bytes) + ", dtype=" + dtype_name(dtype) + ")");
    }
    // The lower rank's operand first on both sides: the same operation, the same bits.
    if (rank < partner) {
      host::reduce_into(buf, scratch.data(), count, dtype, op);
    } else {
      host::reduce_into(scratch.data(), buf, count, dtype, op);
      host::copy(buf, scratch.data(), static_cast<std::size_t>(bytes));
    }
  }
}

}  // namespace gj
