// Expected results of the reductions with Horovod's scaling factors, computed element by
// element in double from values.h's inputs, by the header's rules: every contribution times
// prescale (float avg: times prescale / size), integers truncated; integer avg truncated
// after the exact sum; the result times postscale (integers truncated). With the factors the
// tests use (powers of two) every intermediate is exact in every dtype.
#pragma once

#include <algorithm>
#include <cmath>

#include "values.h"

namespace gjt {

inline double scaled_expected(gjDataType_t d, gjRedOp_t op, int n, std::size_t i, double pre, double post) {
  const bool fl = is_float(d);
  const auto contribution = [&](int r) {
    const double v = input(d, op, r, n, i);
    return fl ? v * (op == gjAvg ? pre / n : pre) : std::trunc(v * pre);
  };
  double acc = contribution(0);
  for (int r = 1; r < n; ++r) {
    const double v = contribution(r);
    switch (op) {
      case gjMin: acc = std::min(acc, v); break;
      case gjMax: acc = std::max(acc, v); break;
      case gjProd: acc *= v; break;
      default: acc += v; break;
    }
  }
  if (op == gjAvg && !fl) acc = std::trunc(acc / n);
  return fl ? acc * post : std::trunc(acc * post);
}

inline std::vector<unsigned char> scaled_expected_of(gjDataType_t d, gjRedOp_t op, int n, std::size_t first,
                                                     std::size_t count, double pre, double post) {
  return tiled(d, first, count, [&](std::size_t i) { return scaled_expected(d, op, n, i, pre, post); });
}

// Index of the first element whose bytes differ, or count when all match.
inline std::size_t first_difference(const unsigned char* a, const unsigned char* b, std::size_t count,
                                    std::size_t esz) {
  if (count == 0 || std::memcmp(a, b, count * esz) == 0) return count;
  for (std::size_t i = 0; i < count; ++i) {
    if (std::memcmp(a + i * esz, b + i * esz, esz) != 0) return i;
  }
  return count;
}

// Horovod's split of `total` rows over n ranks: the first total % n ranks get one more.
inline std::vector<std::size_t> horovod_split(std::size_t total, int n) {
  std::vector<std::size_t> counts(static_cast<std::size_t>(n), total / static_cast<std::size_t>(n));
  for (std::size_t r = 0; r < total % static_cast<std::size_t>(n); ++r) ++counts[r];
  return counts;
}

}  // namespace gjt
