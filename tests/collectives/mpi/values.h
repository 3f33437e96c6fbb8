// Rank-dependent inputs with exactly known results, shared by the allreduce and grouped cases.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "elements.h"

namespace gjt {

// Small integers, negative at some indices (not for u8): every sum/prod/avg below is exact
// in f16 and bf16, and gjAvg on floats divides n * base exactly by n.
inline double input(gjDataType_t d, gjRedOp_t op, int r, int n, std::size_t i) {
  const double sign = (d != gjUint8 && i % 7 == 3) ? -1 : 1;
  const double base = (r + 1) * static_cast<double>(1 + i % 4);
  switch (op) {
    case gjSum: return sign * base;
    case gjAvg: return sign * (is_float(d) ? n * base : base);
    case gjMin:
    case gjMax: return sign * static_cast<double>((static_cast<std::size_t>(r) * 5 + i) % 11);
    default: return sign * static_cast<double>(1 + (static_cast<std::size_t>(r) + i) % 2);
  }
}

inline double expected(gjDataType_t d, gjRedOp_t op, int n, std::size_t i) {
  double acc = input(d, op, 0, n, i);
  for (int r = 1; r < n; ++r) {
    const double v = input(d, op, r, n, i);
    switch (op) {
      case gjMin: acc = std::min(acc, v); break;
      case gjMax: acc = std::max(acc, v); break;
      case gjProd: acc *= v; break;
      default: acc += v; break;
    }
  }
  if (op == gjAvg) acc = is_float(d) ? acc / n : std::trunc(acc / n);
  return acc;
}

// input() and expected() depend on i only through i % 2, 4, 7 and 11: one period, encoded
// once, then copied, keeps large buffers cheap to fill and check.
constexpr std::size_t kPeriod = 308;

// Elements [first, first + count) of f, encoded as dtype d.
template <class F>
std::vector<unsigned char> tiled(gjDataType_t d, std::size_t first, std::size_t count, F&& f) {
  const std::size_t esz = elem_size(d);
  std::vector<unsigned char> period(kPeriod * esz);
  for (std::size_t k = 0; k < kPeriod; ++k) encode(d, f(k), &period[k * esz]);
  std::vector<unsigned char> out(count * esz);
  const std::size_t period_bytes = kPeriod * esz;
  const std::size_t skip = (first % kPeriod) * esz;
  for (std::size_t at = 0; at < out.size();) {  // whole runs of the period, not element by element
    const std::size_t from = at == 0 ? skip : 0;
    const std::size_t n = std::min(period_bytes - from, out.size() - at);
    std::memcpy(&out[at], &period[from], n);
    at += n;
  }
  return out;
}

inline std::vector<unsigned char> inputs_of(gjDataType_t d, gjRedOp_t op, int rank, int n, std::size_t first,
                                            std::size_t count) {
  return tiled(d, first, count, [&](std::size_t i) { return input(d, op, rank, n, i); });
}

inline std::vector<unsigned char> expected_of(gjDataType_t d, gjRedOp_t op, int n, std::size_t count) {
  return tiled(d, 0, count, [&](std::size_t i) { return expected(d, op, n, i); });
}

}  // namespace gjt
