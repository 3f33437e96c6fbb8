// The pure parts of Adasum (Maleki et al., "Scaling Distributed Training with Adaptive
// Summation", MLSys 2021) as Horovod runs it: the adaptive combination of two vectors and the
// vector-halving, distance-doubling schedule over a power-of-two number of ranks.
#pragma once

#include <cstddef>
#include <vector>

namespace gj::adasum {

// Adasum(a, b) = ca * a + cb * b with ca = 1 - dot / (2 |a|^2), cb = 1 - dot / (2 |b|^2): the
// sum when a and b are orthogonal, their average when they are equal, and in between the sum
// with each vector's component along the other halved. A norm below sqrt(DBL_MIN) (a zero
// vector) keeps its partner's coefficient at 1, so Adasum(a, 0) = a.
struct Coefficients {
  double a;
  double b;
};
Coefficients coefficients(double dot, double a_norm2, double b_norm2);

bool power_of_two(int n);

// One level of the halving phase for `rank`: it pairs with rank ^ distance; of its current
// segment [offset, offset + length) it keeps one half (the first when rank & distance is 0, the
// "left" side) and sends the other.
struct Level {
  int distance;
  int peer;
  bool left;               // this rank is the left vector's holder at this level
  std::size_t offset;      // the segment before halving
  std::size_t length;
  std::size_t keep_offset; // the half kept
  std::size_t keep_length;
  std::size_t send_offset; // the half sent to peer
  std::size_t send_length;
};
// The log2(size) levels for rank, distance 1, 2, 4, ...; count elements in all. size must be
// a power of two. The gather phase walks them backwards, sending the kept half and receiving
// the sent one.
std::vector<Level> schedule(int rank, int size, std::size_t count);

}  // namespace gj::adasum
