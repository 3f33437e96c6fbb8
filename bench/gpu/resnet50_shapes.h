// Gradient tensor sizes (elements) of ResNet-50 v1.5 as torchvision builds it: 53 conv weights,
// 53 batch-norm (gamma, beta) pairs, fc weight and bias = 161 tensors, 25,557,032 parameters.
// Generated from the architecture; nothing is downloaded.
#pragma once

#include <cstddef>
#include <vector>

namespace gj::bench {

inline std::vector<std::size_t> resnet50_gradient_sizes() {
  std::vector<std::size_t> t;
  auto conv = [&](std::size_t in, std::size_t out, std::size_t k) { t.push_back(out * in * k * k); };
  auto bn = [&](std::size_t c) { t.push_back(c); t.push_back(c); };
  conv(3, 64, 7);
  bn(64);
  std::size_t in = 64;
  const std::size_t blocks[] = {3, 4, 6, 3};
  const std::size_t widths[] = {64, 128, 256, 512};
  for (int layer = 0; layer < 4; ++layer) {
    const std::size_t w = widths[layer];
    for (std::size_t b = 0; b < blocks[layer]; ++b) {
      conv(in, w, 1), bn(w);
      conv(w, w, 3), bn(w);
      conv(w, 4 * w, 1), bn(4 * w);
      if (b == 0) conv(in, 4 * w, 1), bn(4 * w);  // downsample path
      in = 4 * w;
    }
  }
  t.push_back(1000 * 2048);  // fc weight
  t.push_back(1000);         // fc bias
  return t;
}

}  // namespace gj::bench
