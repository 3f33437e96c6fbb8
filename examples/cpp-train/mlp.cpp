#include "mlp.hpp"

#include <cmath>
#include <cstring>
#include <random>

namespace train {

Tensors zeros(std::size_t dim, std::size_t hidden) {
  return Tensors{std::vector<float>(hidden * dim), std::vector<float>(hidden),
                 std::vector<float>(hidden), std::vector<float>(1)};
}

Tensors random_init(std::size_t dim, std::size_t hidden, std::uint64_t seed) {
  Tensors p = zeros(dim, hidden);
  std::mt19937_64 rng(seed);
  // Scaled so tanh starts in its linear range whatever dim is.
  std::normal_distribution<float> w1(0.0f, 1.0f / std::sqrt(static_cast<float>(dim)));
  std::normal_distribution<float> w2(0.0f, 1.0f / std::sqrt(static_cast<float>(hidden)));
  std::normal_distribution<float> b(0.0f, 0.1f);
  for (float& v : p.w1) v = w1(rng);
  for (float& v : p.b1) v = b(rng);
  for (float& v : p.w2) v = w2(rng);
  for (float& v : p.b2) v = b(rng);
  return p;
}

LossAndGrad loss_and_grad(const Tensors& params, const Dataset& data) {
  const std::size_t dim = data.dim;
  const std::size_t hidden = params.b1.size();
  LossAndGrad out{0.0, zeros(dim, hidden)};
  std::vector<float> h(hidden);
  const float inv_n = 1.0f / static_cast<float>(data.n);

  for (std::size_t i = 0; i < data.n; ++i) {
    const float* x = &data.x[i * dim];
    float logit = params.b2[0];
    for (std::size_t k = 0; k < hidden; ++k) {
      float a = params.b1[k];
      for (std::size_t j = 0; j < dim; ++j) a += params.w1[k * dim + j] * x[j];
      h[k] = std::tanh(a);
      logit += params.w2[k] * h[k];
    }
    const float y = data.y[i];
    // Stable BCE with logits: log(1 + e^z) - y z.
    const double z = logit;
    out.loss += (z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z))) - y * z;

    const float prob = 1.0f / (1.0f + std::exp(-logit));
    const float dlogit = (prob - y) * inv_n;
    out.grad.b2[0] += dlogit;
    for (std::size_t k = 0; k < hidden; ++k) {
      out.grad.w2[k] += dlogit * h[k];
      const float da = dlogit * params.w2[k] * (1.0f - h[k] * h[k]);
      out.grad.b1[k] += da;
      for (std::size_t j = 0; j < dim; ++j) out.grad.w1[k * dim + j] += da * x[j];
    }
  }
  out.loss /= static_cast<double>(data.n);
  return out;
}

void sgd_step(Tensors& params, const Tensors& grad, float lr) {
  const auto p = params.all();
  const auto g = grad.all();
  for (std::size_t t = 0; t < p.size(); ++t) {
    for (std::size_t i = 0; i < p[t]->size(); ++i) (*p[t])[i] -= lr * (*g[t])[i];
  }
}

std::uint64_t bit_hash(const Tensors& params) {
  std::uint64_t h = 14695981039346656037ull;
  for (const std::vector<float>* t : params.all()) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(t->data());
    for (std::size_t i = 0; i < t->size() * sizeof(float); ++i) {
      h ^= bytes[i];
      h *= 1099511628211ull;
    }
  }
  return h;
}

}  // namespace train
