// MPI result codes -> gj::Error(gjMpiError). Our communicators use MPI_ERRORS_RETURN.
#pragma once

#include <mpi.h>

#include <string>

namespace gj {

// Throws gj::Error(gjMpiError, "<what> failed: <MPI error string>") when rc != MPI_SUCCESS.
// what names the MPI call and its arguments, e.g. "MPI_Allreduce(count=7, dtype=f16)".
void mpi_check(int rc, const std::string& what);

}  // namespace gj
