// MPI result codes -> gj::Error(gjMpiError): the library's one MPI-error check. Our
// communicators use MPI_ERRORS_RETURN. Header-only, so every part (the shared-memory engine's
// OBJECT library included) uses it without a link dependency on the core.
#pragma once

#include <mpi.h>

#include <string>

#include "error.h"

namespace gj {

// Throws gj::Error(gjMpiError, "<what> failed: <MPI error string>") when rc != MPI_SUCCESS.
// what names the MPI call and its arguments, e.g. "MPI_Allreduce(count=7, dtype=f16)".
inline void mpi_check(int rc, const std::string& what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  throw Error(gjMpiError, what + " failed: " +
                              (len > 0 ? std::string(text, static_cast<std::size_t>(len))
                                       : "MPI error " + std::to_string(rc)));
}

}  // namespace gj
