// Cross-rank argument agreement: one small MPI_Allreduce tells every rank whether all ranks
// passed the same values, so a mismatch becomes gjInvalidUsage on every rank rather than a
// hang or silently wrong data.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <initializer_list>
#include <utility>

namespace gj {

using Field = std::pair<const char*, std::uint64_t>;

// Collective over comm. Throws gj::Error(gjInvalidUsage) naming call, the first field that
// differs and its smallest and largest values; gjMpiError when the check itself fails.
void require_same_on_all_ranks(MPI_Comm comm, const char* call, std::initializer_list<Field> fields);

}  // namespace gj
