// A two-layer perceptron for binary classification: tanh hidden layer, logistic output,
// mean binary cross-entropy loss. Pure arithmetic on values; no communication here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dataset.hpp"

namespace train {

// Parameters and gradients share this shape: four tensors, each one allreduce input.
struct Tensors {
  std::vector<float> w1;  // hidden * dim
  std::vector<float> b1;  // hidden
  std::vector<float> w2;  // hidden
  std::vector<float> b2;  // 1

  // The tensors in a fixed order, for the grouped collectives.
  std::vector<std::vector<float>*> all() { return {&w1, &b1, &w2, &b2}; }
  std::vector<const std::vector<float>*> all() const { return {&w1, &b1, &w2, &b2}; }
};

Tensors zeros(std::size_t dim, std::size_t hidden);
// Random initial parameters; different seeds give different parameters.
Tensors random_init(std::size_t dim, std::size_t hidden, std::uint64_t seed);

struct LossAndGrad {
  double loss = 0.0;  // mean binary cross-entropy over the shard
  Tensors grad;       // d loss / d params, same shape as params
};

LossAndGrad loss_and_grad(const Tensors& params, const Dataset& data);

// params -= lr * grad, element by element.
void sgd_step(Tensors& params, const Tensors& grad, float lr);

// FNV-1a over the bytes of every tensor: equal hashes <=> (almost surely) equal bits.
std::uint64_t bit_hash(const Tensors& params);

}  // namespace train
