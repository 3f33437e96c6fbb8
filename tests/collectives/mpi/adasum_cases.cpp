// Adasum through the C ABI: on a power-of-two communicator, properties that pin the formula
// exactly (equal inputs give that input, mutually orthogonal inputs give their sum, a zero input
// leaves the rest alone) for f32/f64/f16/bf16, in and out of place, blocking and nonblocking,
// the same bits on every rank; elsewhere the refusal naming the size. The full formula against
// a NumPy reference is tests/torch/test_adasum.py.
#include <mpi.h>

#include <cstring>
#include <string>
#include <vector>

#include "elements.h"
#include "expect.h"
#include "harness.h"

namespace gjt {
namespace {

const Failure F = kAdasum;
constexpr gjDataType_t kFloats[] = {gjFloat32, gjFloat64, gjFloat16, gjBfloat16};

bool pow2(int n) { return n > 0 && (n & (n - 1)) == 0; }

std::vector<unsigned char> encoded(gjDataType_t d, const std::vector<double>& v) {
  std::vector<unsigned char> out(v.size() * elem_size(d));
  for (std::size_t i = 0; i < v.size(); ++i) encode(d, v[i], out.data() + i * elem_size(d));
  return out;
}

void expect_values(Ctx& ctx, const std::string& name, gjDataType_t d, const std::vector<unsigned char>& got,
                   const std::vector<double>& want) {
  const std::vector<unsigned char> w = encoded(d, want);
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::memcmp(got.data() + i * elem_size(d), w.data() + i * elem_size(d), elem_size(d)) != 0) {
      ctx.fail(F, name + ": first wrong element " + std::to_string(i) + " (want " + std::to_string(want[i]) + ")");
      return;
    }
  }
}

void run_case(Ctx& ctx, gjDataType_t d, const std::string& what, const std::vector<double>& mine,
              const std::vector<double>& want, bool in_place, bool nonblocking) {
  std::vector<unsigned char> send = encoded(d, mine), recv(send.size(), 0);
  void* out = in_place ? send.data() : recv.data();
  const std::string name = std::string("adasum ") + what + " dtype=" + dname(d) + (in_place ? " in place" : "") +
                           (nonblocking ? " nonblocking" : "");
  gjResult_t rc;
  if (nonblocking) {
    gjRequest_t req = nullptr;
    rc = gjIallReduceAdasum(send.data(), out, mine.size(), d, ctx.comm, &req);
    if (rc == gjSuccess) rc = gjWait(req);
  } else {
    rc = gjAllReduceAdasum(send.data(), out, mine.size(), d, ctx.comm);
  }
  if (rc != gjSuccess) {
    ctx.fail(F, name + ": returned " + gjGetErrorString(rc) + ": " + gjGetLastError(ctx.comm));
    return;
  }
  expect_values(ctx, name, d, in_place ? send : recv, want);
}

}  // namespace

void run_adasum_cases(Ctx& ctx) {
  const int n = ctx.size, r = ctx.rank;
  std::vector<float> a(8, 1.0f), b(8);
  if (!pow2(n)) {
    expect_error(ctx, F, "adasum on a non-power-of-two size",
                 gjAllReduceAdasum(a.data(), b.data(), 8, gjFloat32, ctx.comm), gjUnsupported,
                 "the communicator has " + std::to_string(n) + " ranks; Adasum runs on a power of two", ctx.comm);
    return;
  }
  const std::size_t len = 4 * static_cast<std::size_t>(n) + 3;  // odd: uneven halves at every level
  for (gjDataType_t d : kFloats) {
    for (bool in_place : {false, true}) {
      for (bool nb : {false, true}) {
        // Equal inputs: Adasum(x, x) = x at every level.
        std::vector<double> same(len);
        for (std::size_t i = 0; i < len; ++i) same[i] = static_cast<double>(i % 7) - 3.0;
        run_case(ctx, d, "equal inputs", same, same, in_place, nb);
        // Orthogonal inputs (disjoint supports): the plain sum.
        std::vector<double> mine(len, 0.0), sum(len, 0.0);
        for (std::size_t i = 0; i < len; ++i) {
          const int owner = static_cast<int>(i % static_cast<std::size_t>(n));
          const double v = static_cast<double>(owner + 1) * (i % 2 ? 1.0 : -2.0);
          sum[i] = v;
          if (owner == r) mine[i] = v;
        }
        run_case(ctx, d, "orthogonal inputs", mine, sum, in_place, nb);
      }
    }
  }
  // Rank 0 alone non-zero: its vector.
  std::vector<double> lone(len, 0.0), want(len);
  for (std::size_t i = 0; i < len; ++i) want[i] = static_cast<double>(i) + 0.5;
  if (r == 0) lone = want;
  run_case(ctx, gjFloat64, "one non-zero input", lone, want, false, false);

  expect_error(ctx, kInvalidArgs, "adasum i32", gjAllReduceAdasum(a.data(), b.data(), 8, gjInt32, ctx.comm),
               gjUnsupported, "dtype=i32 cannot be combined by Adasum", ctx.comm);
  expect_error(ctx, kInvalidArgs, "adasum recvbuff=NULL", gjAllReduceAdasum(a.data(), nullptr, 8, gjFloat32, ctx.comm),
               gjInvalidArgument, "recvbuff", ctx.comm);
  // Mismatched counts fail on every rank with the check on.
  if (n >= 2) {
    gjComm_t c = nullptr;
    const MPI_Comm world = MPI_COMM_WORLD;
    expect_ok(ctx, F, "gjCommInitMpi", gjCommInitMpi(&c, &world));
    expect_ok(ctx, F, "gjCommSetCheck(1)", gjCommSetCheck(c, 1), c);
    expect_error(ctx, F, "adasum count differs", gjAllReduceAdasum(a.data(), b.data(), r == 0 ? 7 : 8, gjFloat32, c),
                 gjInvalidUsage, "gjAllReduceAdasum: ranks passed different count (smallest 7, largest 8)", c);
    expect_ok(ctx, F, "gjCommDestroy", gjCommDestroy(c));
  }
}

}  // namespace gjt
