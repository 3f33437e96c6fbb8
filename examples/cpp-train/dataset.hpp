// Synthetic binary classification data, made in the program so the example needs no files.
// Every rank draws its own shard (seeded by rank) from the same distribution: the labels come
// from one fixed "teacher" direction shared by all ranks, so the shards agree on what to learn.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace train {

struct Dataset {
  std::size_t n = 0;      // samples
  std::size_t dim = 0;    // features per sample
  std::vector<float> x;   // n * dim, row-major
  std::vector<float> y;   // n labels in {0, 1}
};

// Pure given its arguments: the same (seed, rank) gives the same shard.
inline Dataset make_shard(std::uint64_t seed, int rank, std::size_t n, std::size_t dim) {
  std::mt19937_64 teacher_rng(seed);  // same on every rank
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> teacher(dim);
  for (float& t : teacher) t = normal(teacher_rng);

  std::mt19937_64 rng(seed * 7919u + 1u + static_cast<std::uint64_t>(rank));  // own shard
  Dataset d{n, dim, std::vector<float>(n * dim), std::vector<float>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    float score = 0.0f;
    for (std::size_t j = 0; j < dim; ++j) {
      const float v = normal(rng);
      d.x[i * dim + j] = v;
      score += v * teacher[j];
    }
    d.y[i] = score > 0.0f ? 1.0f : 0.0f;
  }
  return d;
}

}  // namespace train
