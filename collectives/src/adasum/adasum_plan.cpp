#include "adasum/adasum_plan.h"

#include <cfloat>
#include <cmath>

namespace gj::adasum {

Coefficients coefficients(double dot, double a_norm2, double b_norm2) {
  static const double tiny = std::sqrt(DBL_MIN);
  Coefficients c{1.0, 1.0};
  if (a_norm2 >= tiny) c.a = 1.0 - dot / a_norm2 * 0.5;
  if (b_norm2 >= tiny) c.b = 1.0 - dot / b_norm2 * 0.5;
  return c;
}

bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

std::vector<Level> schedule(int rank, int size, std::size_t count) {
  std::vector<Level> levels;
  std::size_t offset = 0, length = count;
  for (int d = 1; d < size; d <<= 1) {
    Level l;
    l.distance = d;
    l.peer = rank ^ d;
    l.left = (rank & d) == 0;
    l.offset = offset;
    l.length = length;
    const std::size_t first = length / 2, second = length - first;
    if (l.left) {
      l.keep_offset = offset;
      l.keep_length = first;
      l.send_offset = offset + first;
      l.send_length = second;
    } else {
      l.keep_offset = offset + first;
      l.keep_length = second;
      l.send_offset = offset;
      l.send_length = first;
    }
    levels.push_back(l);
    offset = l.keep_offset;
    length = l.keep_length;
  }
  return levels;
}

}  // namespace gj::adasum
