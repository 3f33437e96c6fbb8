#include "alltoall/alltoall_plan.h"

#include <climits>

namespace gj::alltoall {

std::vector<Step> pairwise_steps(int rank, int size) {
  std::vector<Step> steps;
  for (int k = 1; k < size; ++k) steps.push_back(Step{(rank + k) % size, (rank - k + size) % size});
  return steps;
}

bool fits_int(const std::size_t* counts, int size, std::size_t elem) {
  constexpr std::size_t kMax = static_cast<std::size_t>(INT_MAX);
  std::size_t total = 0;
  for (int q = 0; q < size; ++q) {
    if (counts[q] > kMax / elem) return false;
    total += counts[q] * elem;
    if (total > kMax) return false;
  }
  return true;
}

int first_mismatch(const std::size_t* mine, const std::size_t* theirs, int size) {
  for (int q = 0; q < size; ++q) {
    if (mine[q] != theirs[q]) return q;
  }
  return -1;
}

}  // namespace gj::alltoall
