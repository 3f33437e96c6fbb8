#include "agreement.h"

#include <string>
#include <vector>

#include "error.h"
#include "mpi/mpi_check.h"

namespace gj {

void require_same_on_all_ranks(MPI_Comm comm, const char* call, std::initializer_list<Field> fields) {
  // min(v) and min(~v) = ~max(v) in one MPI_MIN reduction.
  std::vector<std::uint64_t> v;
  v.reserve(2 * fields.size());
  for (const Field& f : fields) {
    v.push_back(f.second);
    v.push_back(~f.second);
  }
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_UINT64_T,
                          MPI_MIN, comm),
            std::string(call) + ": MPI_Allreduce(argument check)");
  std::size_t i = 0;
  for (const Field& f : fields) {
    const std::uint64_t lo = v[2 * i];
    const std::uint64_t hi = ~v[2 * i + 1];
    if (lo != hi) {
      throw Error(gjInvalidUsage, std::string(call) + ": ranks passed different " + f.first +
                                      " (smallest " + std::to_string(lo) + ", largest " +
                                      std::to_string(hi) + "); every rank must pass the same value");
    }
    ++i;
  }
}

}  // namespace gj
