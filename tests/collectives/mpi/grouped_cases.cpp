// Grouped allreduce == one allreduce per tensor, bitwise, over many tensor shapes, fusion
// thresholds (0 = off, smaller than any tensor, small, large, default), dtypes and ops.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "elements.h"
#include "harness.h"
#include "values.h"

namespace gjt {
namespace {

using Shape = std::vector<std::size_t>;
using Tensors = std::vector<std::vector<unsigned char>>;

std::vector<Shape> shapes() {
  Shape many;
  for (std::size_t i = 0; i < 48; ++i) many.push_back((i * 37) % 300);  // includes 0-sized tensors
  return {
      {},
      {4096},
      {1, 7, 0, 1023, 64, 5000, 3, 100000, 1, 1, 256, 17},
      many,
  };
}

// Finite values with arbitrary mantissa bits, so sums round (2 ranks only: a + b == b + a
// keeps fused and per-tensor results bitwise equal whatever order MPI uses).
void random_element(gjDataType_t d, std::uint64_t bits, unsigned char* dst) {
  switch (d) {
    case gjFloat32: {
      const auto u = static_cast<std::uint32_t>((bits & 0x807fffffu) | ((120u + (bits >> 40) % 16) << 23));
      std::memcpy(dst, &u, 4);
      break;
    }
    case gjFloat64: {
      const std::uint64_t u = (bits & 0x800fffffffffffffull) | ((1016ull + (bits >> 20) % 16) << 52);
      std::memcpy(dst, &u, 8);
      break;
    }
    case gjFloat16: {
      const auto u = static_cast<std::uint16_t>((bits & 0x83ffu) | ((8u + (bits >> 40) % 16) << 10));
      std::memcpy(dst, &u, 2);
      break;
    }
    case gjBfloat16: {
      const auto u = static_cast<std::uint16_t>((bits & 0x807fu) | ((120u + (bits >> 40) % 16) << 7));
      std::memcpy(dst, &u, 2);
      break;
    }
    default: encode(d, static_cast<double>((bits >> 33) % 50), dst); break;
  }
}

// Tensor t's element i gets the value a single allreduce would see at index t * 1000 + i, so
// neighbouring tensors differ.
Tensors inputs(gjDataType_t d, gjRedOp_t op, int rank, int size, const Shape& shape, bool random) {
  Tensors ts;
  std::uint64_t state = 0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(rank + 1);
  const std::size_t esz = elem_size(d);
  for (std::size_t t = 0; t < shape.size(); ++t) {
    if (!random) {
      ts.push_back(inputs_of(d, op, rank, size, t * 1000, shape[t]));
      continue;
    }
    std::vector<unsigned char> buf(shape[t] * esz);
    for (std::size_t i = 0; i < shape[t]; ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      random_element(d, state, &buf[i * esz]);
    }
    ts.push_back(std::move(buf));
  }
  return ts;
}

void compare(Ctx& ctx, const std::string& name, const Tensors& got, const Tensors& want, std::size_t esz) {
  for (std::size_t t = 0; t < got.size(); ++t) {
    if (got[t] == want[t]) continue;
    std::size_t i = 0;
    while (std::memcmp(&got[t][i * esz], &want[t][i * esz], esz) == 0) ++i;
    ctx.fail(kGrouped, name + ": tensor " + std::to_string(t) + " first different index " + std::to_string(i));
    return;
  }
}

void run_case(Ctx& ctx, gjDataType_t d, gjRedOp_t op, const Shape& shape, bool random, std::size_t default_threshold) {
  const std::size_t esz = elem_size(d);
  const Tensors in = inputs(d, op, ctx.rank, ctx.size, shape, random);
  Tensors per_tensor = in;
  for (std::size_t t = 0; t < shape.size(); ++t) {
    if (gjAllReduce(per_tensor[t].data(), per_tensor[t].data(), shape[t], d, op, ctx.comm, nullptr) != gjSuccess) {
      ctx.fail(kGrouped, std::string("per-tensor reference failed: ") + gjGetLastError(ctx.comm));
      return;
    }
  }
  const std::size_t thresholds[] = {0, 1, 64, 4096, std::size_t{1} << 20, default_threshold};
  for (std::size_t threshold : thresholds) {
    const std::string name = std::string("grouped dtype=") + dname(d) + " op=" + oname(op) + " ntensors=" +
                             std::to_string(shape.size()) + " threshold=" + std::to_string(threshold) +
                             (random ? " random" : "");
    gjCommSetFusionThreshold(ctx.comm, threshold);
    // Even tensors out of place, odd in place.
    Tensors out(in.size());
    Tensors inplace = in;
    std::vector<const void*> sends;
    std::vector<void*> recvs;
    for (std::size_t t = 0; t < in.size(); ++t) {
      out[t].assign(in[t].size(), 0x5a);
      sends.push_back(t % 2 ? inplace[t].data() : in[t].data());
      recvs.push_back(t % 2 ? inplace[t].data() : out[t].data());
    }
    const gjResult_t rc = gjGroupedAllReduce(sends.data(), recvs.data(), shape.data(), static_cast<int>(shape.size()),
                                             d, op, ctx.comm, nullptr);
    if (rc != gjSuccess) {
      ctx.fail(kGrouped, name + ": returned " + gjGetErrorString(rc) + ": " + gjGetLastError(ctx.comm));
      continue;
    }
    for (std::size_t t = 1; t < in.size(); t += 2) out[t] = inplace[t];
    compare(ctx, name, out, per_tensor, esz);
  }
  gjCommSetFusionThreshold(ctx.comm, default_threshold);
}

}  // namespace

void run_grouped_cases(Ctx& ctx) {
  std::size_t default_threshold = 0;
  gjCommGetFusionThreshold(ctx.comm, &default_threshold);
  for (const Shape& shape : shapes()) {
    for (gjDataType_t d : kDtypes) {
      for (gjRedOp_t op : {gjSum, gjAvg, gjMax, gjProd}) run_case(ctx, d, op, shape, false, default_threshold);
    }
  }
  if (ctx.size <= 2) {  // arbitrary floats: bitwise equality holds when a + b == b + a suffices
    for (gjDataType_t d : {gjFloat32, gjFloat64, gjFloat16, gjBfloat16}) {
      run_case(ctx, d, gjSum, shapes()[2], true, default_threshold);
    }
  }
}

}  // namespace gjt
