// Reduce-scatter with Horovod's row split (the first total % size ranks get one more
// element, so small totals give some ranks zero): every reducible dtype x op x in/out of
// place x size, each rank checking its slice bitwise against the exact result. Data-movement
// dtypes are rejected with gjUnsupported.
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "expect.h"
#include "harness.h"
#include "scaled_values.h"

namespace gjt {
namespace {

constexpr std::size_t kGuard = 16;

void run_one(Ctx& ctx, gjDataType_t d, gjRedOp_t op, bool in_place, std::size_t total, double pre, double post,
             Failure f) {
  const std::size_t esz = elem_size(d);
  const std::vector<std::size_t> counts = horovod_split(total, ctx.size);
  std::size_t offset = 0;
  for (int r = 0; r < ctx.rank; ++r) offset += counts[static_cast<std::size_t>(r)];
  const std::size_t mine = counts[static_cast<std::size_t>(ctx.rank)];
  std::vector<unsigned char> send = inputs_of(d, op, ctx.rank, ctx.size, 0, total);
  send.resize(send.size() + kGuard, 0x5a);
  const std::vector<unsigned char> send_copy = send;
  std::vector<unsigned char> recv(mine * esz + kGuard, 0x5a);
  unsigned char* out = in_place ? send.data() + offset * esz : recv.data();
  const std::string name = std::string("reduce_scatter dtype=") + dname(d) + " op=" + oname(op) +
                           " in_place=" + (in_place ? "1" : "0") + " total=" + std::to_string(total) +
                           " pre=" + std::to_string(pre) + " post=" + std::to_string(post);
  const gjResult_t rc = gjReduceScatter(total ? send.data() : nullptr, mine ? out : nullptr, counts.data(), d, op,
                                        pre, post, ctx.comm, nullptr);
  if (rc != gjSuccess) {
    ctx.fail(f, name + ": returned " + gjGetErrorString(rc) + ": " + gjGetLastError(ctx.comm));
    return;
  }
  std::vector<unsigned char> want = scaled_expected_of(d, op, ctx.size, offset, mine, pre, post);
  const std::size_t bad = first_difference(out, want.data(), mine, esz);
  if (bad < mine) {
    ctx.fail(f, name + ": first wrong index " + std::to_string(offset + bad) + ": got " +
                    std::to_string(decode(d, out + bad * esz)) + ", expected " +
                    std::to_string(scaled_expected(d, op, ctx.size, offset + bad, pre, post)));
  }
  if (!in_place) {
    if (std::memcmp(recv.data() + mine * esz, send_copy.data() + total * esz, kGuard) != 0) {
      ctx.fail(f, name + ": wrote past the end of recvbuff");
    }
    if (send != send_copy) ctx.fail(f, name + ": modified sendbuff");
  }
}

}  // namespace

void run_reduce_scatter_cases(Ctx& ctx) {
  const std::size_t small[] = {0, 1, 3, 7, 1025, 16387};
  for (gjDataType_t d : kDtypes) {
    for (gjRedOp_t op : kOps) {
      for (bool in_place : {false, true}) {
        for (std::size_t total : small) run_one(ctx, d, op, in_place, total, 1.0, 1.0, kReduceScatter);
      }
    }
    // Several pipeline rounds of the shared-memory engine (1 MiB chunks).
    run_one(ctx, d, gjSum, false, (std::size_t{1} << 20) + 5, 1.0, 1.0, kReduceScatter);
    run_one(ctx, d, gjAvg, true, 300007, 1.0, 1.0, kReduceScatter);
  }
  for (gjDataType_t d : {gjInt8, gjInt16, gjBool, gjByte}) {
    unsigned char buf[64] = {};
    const std::vector<std::size_t> counts(static_cast<std::size_t>(ctx.size), 1);
    expect_error(ctx, kReduceScatter, std::string("reduce_scatter dtype=") + dname(d),
                 gjReduceScatter(buf, buf, counts.data(), d, gjSum, 1.0, 1.0, ctx.comm, nullptr), gjUnsupported,
                 std::string("gjReduceScatter: dtype=") + dname(d) + " is for data movement only", ctx.comm);
  }
}

// Scaling inside allreduce, grouped allreduce and reduce-scatter, against the element-wise rule.
void run_scaled_cases(Ctx& ctx) {
  const std::pair<double, double> factors[] = {{0.5, 4.0}, {2.0, 0.25}, {1.0, 2.0}};
  for (gjDataType_t d : kDtypes) {
    const std::size_t esz = elem_size(d);
    for (gjRedOp_t op : kOps) {
      for (const auto& [pre, post] : factors) {
        for (std::size_t count : {std::size_t{1}, std::size_t{1031}, std::size_t{70001}}) {
          const std::string name = std::string("allreduce_scaled dtype=") + dname(d) + " op=" + oname(op) +
                                   " pre=" + std::to_string(pre) + " post=" + std::to_string(post) +
                                   " count=" + std::to_string(count);
          const std::vector<unsigned char> send = inputs_of(d, op, ctx.rank, ctx.size, 0, count);
          std::vector<unsigned char> recv(send.size());
          const gjResult_t rc =
              gjAllReduceScaled(send.data(), recv.data(), count, d, op, pre, post, ctx.comm, nullptr);
          if (rc != gjSuccess) {
            ctx.fail(kScaled, name + ": returned " + gjGetErrorString(rc) + ": " + gjGetLastError(ctx.comm));
            continue;
          }
          const std::vector<unsigned char> want = scaled_expected_of(d, op, ctx.size, 0, count, pre, post);
          const std::size_t bad = first_difference(recv.data(), want.data(), count, esz);
          if (bad < count) {
            ctx.fail(kScaled, name + ": first wrong index " + std::to_string(bad) + ": got " +
                                  std::to_string(decode(d, &recv[bad * esz])) + ", expected " +
                                  std::to_string(scaled_expected(d, op, ctx.size, bad, pre, post)));
          }
        }
        // Grouped: three tensors in place, each element as the single call gives it.
        const std::size_t counts[3] = {5, 0, 2049};
        std::vector<unsigned char> t[3];
        const void* sends[3];
        void* recvs[3];
        std::size_t first = 0;
        for (int k = 0; k < 3; ++k) {
          t[k] = inputs_of(d, op, ctx.rank, ctx.size, first, counts[k]);
          sends[k] = recvs[k] = t[k].data();
          first += counts[k];
        }
        const std::string name = std::string("grouped_scaled dtype=") + dname(d) + " op=" + oname(op) +
                                 " pre=" + std::to_string(pre);
        const gjResult_t rc = gjGroupedAllReduceScaled(sends, recvs, counts, 3, d, op, pre, post, ctx.comm, nullptr);
        if (rc != gjSuccess) {
          ctx.fail(kScaled, name + ": returned " + gjGetErrorString(rc) + ": " + gjGetLastError(ctx.comm));
        } else {
          first = 0;
          for (int k = 0; k < 3; ++k) {
            const auto want = scaled_expected_of(d, op, ctx.size, first, counts[k], pre, post);
            if (first_difference(t[k].data(), want.data(), counts[k], esz) < counts[k]) {
              ctx.fail(kScaled, name + ": tensor " + std::to_string(k) + " differs");
            }
            first += counts[k];
          }
        }
        run_one(ctx, d, op, false, 4099, pre, post, kScaled);
        run_one(ctx, d, op, true, 37, pre, post, kScaled);
      }
    }
  }
  float x = 1;
  expect_error(ctx, kScaled, "allreduce_scaled prescale=nan", gjAllReduceScaled(&x, &x, 1, gjFloat32, gjSum, NAN, 1.0,
                                                                                  ctx.comm, nullptr),
               gjInvalidArgument, "gjAllReduceScaled: prescale=nan is not finite", ctx.comm);
  std::int8_t b = 1;
  expect_error(ctx, kScaled, "allreduce i8", gjAllReduce(&b, &b, 1, gjInt8, gjSum, ctx.comm, nullptr), gjUnsupported,
               "gjAllReduce: dtype=i8 is for data movement only", ctx.comm);
}

}  // namespace gjt
