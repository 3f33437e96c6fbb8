// Gloo-style cross product: every dtype x op x in/out-of-place x size, rank-dependent inputs
// whose results are exact in every dtype, checked bitwise, naming the first wrong index.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "elements.h"
#include "harness.h"
#include "values.h"

namespace gjt {
namespace {

constexpr std::size_t kGuard = 16;  // bytes after the buffer that no call may touch
constexpr unsigned char kSentinel = 0x5a;

std::vector<unsigned char> filled(gjDataType_t d, std::size_t count, unsigned char fill) {
  return std::vector<unsigned char>(count * elem_size(d) + kGuard, fill);
}

// Index of the first element whose bytes differ, or count when all match.
std::size_t first_difference(const unsigned char* a, const unsigned char* b, std::size_t count, std::size_t esz) {
  if (std::memcmp(a, b, count * esz) == 0) return count;
  for (std::size_t i = 0; i < count; ++i) {
    if (std::memcmp(a + i * esz, b + i * esz, esz) != 0) return i;
  }
  return count;
}

void run_one(Ctx& ctx, gjDataType_t d, gjRedOp_t op, bool in_place, std::size_t count) {
  const std::size_t esz = elem_size(d);
  std::vector<unsigned char> send = inputs_of(d, op, ctx.rank, ctx.size, 0, count);
  send.resize(send.size() + kGuard, kSentinel);
  const std::vector<unsigned char> send_copy = send;
  std::vector<unsigned char> recv = in_place ? send : filled(d, count, kSentinel);
  const void* sendbuff = in_place ? static_cast<const void*>(recv.data()) : send.data();

  const std::string name = std::string("allreduce dtype=") + dname(d) + " op=" + oname(op) +
                           " in_place=" + (in_place ? "1" : "0") + " count=" + std::to_string(count) +
                           " ranks=" + std::to_string(ctx.size);
  const gjResult_t rc = gjAllReduce(count ? sendbuff : nullptr, count ? recv.data() : nullptr, count, d, op,
                                    ctx.comm, nullptr);
  if (rc != gjSuccess) {
    ctx.fail(kAllreduce, name + ": returned " + gjGetErrorString(rc) + ": " + gjGetLastError(ctx.comm));
    return;
  }
  std::vector<unsigned char> want = expected_of(d, op, ctx.size, count);
  want.resize(want.size() + kGuard, kSentinel);
  const std::size_t bad = first_difference(recv.data(), want.data(), count, esz);
  if (bad < count) {
    ctx.fail(kAllreduce, name + ": first wrong index " + std::to_string(bad) + ": got " +
                             std::to_string(decode(d, &recv[bad * esz])) + ", expected " +
                             std::to_string(expected(d, op, ctx.size, bad)));
  }
  if (std::memcmp(recv.data() + count * esz, want.data() + count * esz, kGuard) != 0) {
    ctx.fail(kAllreduce, name + ": wrote past the end of recvbuff");
  }
  if (!in_place && send != send_copy) ctx.fail(kAllreduce, name + ": modified sendbuff");
}

}  // namespace

void run_allreduce_cases(Ctx& ctx) {
  // Every dtype x op x placement at 0, 1 and odd sizes; both sides of power-of-two
  // boundaries (shared-memory slices, MPI algorithm switch points) and a large buffer with
  // one op per placement (the boundaries do not depend on the op).
  const std::size_t small[] = {0, 1, 2, 7, 1023, 1025, 16385};
  const std::size_t boundaries[] = {1024, 16384, 65535, 65537, 262147, (std::size_t{1} << 22) + 3};
  for (gjDataType_t d : kDtypes) {
    for (gjRedOp_t op : kOps) {
      for (bool in_place : {false, true}) {
        for (std::size_t count : small) run_one(ctx, d, op, in_place, count);
      }
    }
    for (std::size_t count : boundaries) {
      run_one(ctx, d, gjSum, false, count);
      run_one(ctx, d, gjAvg, true, count);
    }
  }
}

}  // namespace gjt
