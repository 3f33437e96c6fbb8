#include "mpi/mpi_check.h"

#include "error.h"

namespace gj {

void mpi_check(int rc, const std::string& what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  throw Error(gjMpiError, what + " failed: " +
                              (len > 0 ? std::string(text, static_cast<std::size_t>(len))
                                       : "MPI error " + std::to_string(rc)));
}

}  // namespace gj
