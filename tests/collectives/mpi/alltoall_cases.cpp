// Alltoall-v: every dtype, per-pair counts (equal, zero on some pairs, one rank receiving all,
// large blocks), blocking and nonblocking (results identical), checked bytewise with nothing
// written past recvbuff; mismatched pair counts fail on every rank naming the pair; invalid
// arguments rejected.
#include <mpi.h>

#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "expect.h"
#include "harness.h"
#include "scaled_values.h"

namespace gjt {
namespace {

constexpr std::size_t kGuard = 16;
const Failure F = kAlltoall;

// The b-th byte of the block rank `from` sends to rank `to`: a pattern naming both, so a block
// delivered to the wrong rank or offset shows.
unsigned char byte_of(int from, int to, std::size_t b) {
  return static_cast<unsigned char>(from * 53 + to * 29 + b * 7 + 1);
}

using Counts = std::function<std::size_t(int from, int to)>;

void run_one(Ctx& ctx, gjDataType_t d, const Counts& count, const std::string& shape, bool nonblocking) {
  const std::size_t esz = elem_size(d);
  const int n = ctx.size, me = ctx.rank;
  std::vector<std::size_t> sendcounts, recvcounts;
  for (int q = 0; q < n; ++q) {
    sendcounts.push_back(count(me, q));
    recvcounts.push_back(count(q, me));
  }
  const std::size_t out = std::accumulate(sendcounts.begin(), sendcounts.end(), std::size_t{0});
  const std::size_t in = std::accumulate(recvcounts.begin(), recvcounts.end(), std::size_t{0});
  std::vector<unsigned char> send(out * esz), want(in * esz + kGuard, 0x5a), recv(want.size(), 0x5a);
  std::size_t at = 0;
  for (int q = 0; q < n; ++q) {
    for (std::size_t b = 0; b < sendcounts[static_cast<std::size_t>(q)] * esz; ++b) send[at++] = byte_of(me, q, b);
  }
  at = 0;
  for (int q = 0; q < n; ++q) {
    for (std::size_t b = 0; b < recvcounts[static_cast<std::size_t>(q)] * esz; ++b) want[at++] = byte_of(q, me, b);
  }
  const std::string name = std::string(nonblocking ? "ialltoallv" : "alltoallv") + " dtype=" + dname(d) + " " + shape;
  gjResult_t rc;
  if (nonblocking) {
    gjRequest_t req = nullptr;
    rc = gjIallToAllV(out ? send.data() : nullptr, sendcounts.data(), in ? recv.data() : nullptr, recvcounts.data(), d,
                      ctx.comm, nullptr, &req);
    if (rc == gjSuccess) rc = gjWait(req);
  } else {
    rc = gjAllToAllV(out ? send.data() : nullptr, sendcounts.data(), in ? recv.data() : nullptr, recvcounts.data(), d,
                     ctx.comm, nullptr);
  }
  if (rc != gjSuccess) {
    ctx.fail(F, name + ": returned " + gjGetErrorString(rc) + ": " + gjGetLastError(ctx.comm));
    return;
  }
  const std::size_t bad = first_difference(recv.data(), want.data(), in, esz);
  if (bad < in) ctx.fail(F, name + ": first wrong element " + std::to_string(bad));
  if (std::memcmp(recv.data() + in * esz, want.data() + in * esz, kGuard) != 0) {
    ctx.fail(F, name + ": wrote past the end of recvbuff");
  }
}

void mismatches(Ctx& ctx) {
  if (ctx.size < 2) return;
  gjComm_t c = nullptr;
  const MPI_Comm world = MPI_COMM_WORLD;
  expect_ok(ctx, F, "gjCommInitMpi", gjCommInitMpi(&c, &world));
  expect_ok(ctx, F, "gjCommSetCheck(1)", gjCommSetCheck(c, 1), c);
  const std::size_t n = static_cast<std::size_t>(ctx.size);
  std::vector<std::size_t> sendcounts(n, 2), recvcounts(n, 2);
  std::vector<float> send(4 * n), recv(4 * n);
  // Rank 1 expects 3 elements from rank 0, which sends 2.
  if (ctx.rank == 1) recvcounts[0] = 3;
  expect_error(ctx, F, "pair counts differ",
               gjAllToAllV(send.data(), sendcounts.data(), recv.data(), recvcounts.data(), gjFloat32, c, nullptr),
               gjInvalidUsage,
               "gjAllToAllV: rank 0 sends 2 elements to rank 1 (its sendcounts[1]) but rank 1 expects 3 "
               "(its recvcounts[0])",
               c);
  recvcounts[0] = 2;
  expect_error(ctx, F, "dtype differs",
               gjAllToAllV(send.data(), sendcounts.data(), recv.data(), recvcounts.data(),
                           ctx.rank == 0 ? gjInt32 : gjFloat32, c, nullptr),
               gjInvalidUsage, "gjAllToAllV: ranks passed different dtype", c);
  expect_error(ctx, F, "alltoall vs allreduce",
               ctx.rank == 0
                   ? gjAllToAllV(send.data(), sendcounts.data(), recv.data(), recvcounts.data(), gjFloat32, c, nullptr)
                   : gjAllReduce(send.data(), send.data(), 2, gjFloat32, gjSum, c, nullptr),
               gjInvalidUsage, "ranks passed different collective (smallest allreduce, largest alltoall)", c);
  expect_ok(ctx, F, "matching alltoall after mismatches",
            gjAllToAllV(send.data(), sendcounts.data(), recv.data(), recvcounts.data(), gjFloat32, c, nullptr), c);
  // Nonblocking: the request fails on every rank.
  if (ctx.rank == 1) recvcounts[0] = 1;
  gjRequest_t req = nullptr;
  gjResult_t rc =
      gjIallToAllV(send.data(), sendcounts.data(), recv.data(), recvcounts.data(), gjFloat32, c, nullptr, &req);
  if (rc == gjSuccess) rc = gjWait(req);
  expect_error(ctx, F, "nonblocking pair counts differ", rc, gjInvalidUsage, "but rank 1 expects 1", c);
  expect_ok(ctx, F, "gjCommDestroy", gjCommDestroy(c));
}

void invalid(Ctx& ctx) {
  const std::size_t n = static_cast<std::size_t>(ctx.size);
  std::vector<std::size_t> counts(n, 1);
  std::vector<float> a(n), b(n);
  expect_error(ctx, kInvalidArgs, "alltoall sendcounts=NULL",
               gjAllToAllV(a.data(), nullptr, b.data(), counts.data(), gjFloat32, ctx.comm, nullptr),
               gjInvalidArgument, "gjAllToAllV: sendcounts=NULL", ctx.comm);
  expect_error(ctx, kInvalidArgs, "alltoall recvcounts=NULL",
               gjAllToAllV(a.data(), counts.data(), b.data(), nullptr, gjFloat32, ctx.comm, nullptr),
               gjInvalidArgument, "gjAllToAllV: recvcounts=NULL", ctx.comm);
  expect_error(ctx, kInvalidArgs, "alltoall in place",
               gjAllToAllV(a.data(), counts.data(), a.data(), counts.data(), gjFloat32, ctx.comm, nullptr),
               gjInvalidArgument, "sendbuff == recvbuff", ctx.comm);
  expect_error(ctx, kInvalidArgs, "alltoall recvbuff=NULL",
               gjAllToAllV(a.data(), counts.data(), nullptr, counts.data(), gjFloat32, ctx.comm, nullptr),
               gjInvalidArgument, "recvbuff", ctx.comm);
  std::vector<std::size_t> negative = counts;
  negative[0] = static_cast<std::size_t>(-1);
  expect_error(ctx, kInvalidArgs, "alltoall negative count",
               gjAllToAllV(a.data(), negative.data(), b.data(), counts.data(), gjFloat32, ctx.comm, nullptr),
               gjInvalidArgument, "sendcounts[0]=", ctx.comm);
  expect_error(ctx, kInvalidArgs, "ialltoall request=NULL",
               gjIallToAllV(a.data(), counts.data(), b.data(), counts.data(), gjFloat32, ctx.comm, nullptr, nullptr),
               gjInvalidArgument, "request", ctx.comm);
}

}  // namespace

void run_alltoall_cases(Ctx& ctx) {
  const std::vector<std::pair<std::string, Counts>> shapes = {
      {"counts=0", [](int, int) { return std::size_t{0}; }},
      {"counts=1", [](int, int) { return std::size_t{1}; }},
      {"counts=1025", [](int, int) { return std::size_t{1025}; }},
      {"counts=from*3+to", [](int from, int to) { return static_cast<std::size_t>(from * 3 + to); }},
      {"counts=zero-on-odd-pairs",
       [](int from, int to) { return (from + to) % 2 ? std::size_t{0} : static_cast<std::size_t>(513 + from); }},
      {"counts=all-to-last", [n = ctx.size](int, int to) { return to == n - 1 ? std::size_t{4099} : std::size_t{0}; }},
  };
  for (gjDataType_t d : kAllDtypes) {
    for (const auto& s : shapes) {
      for (bool nb : {false, true}) run_one(ctx, d, s.second, s.first, nb);
    }
  }
  // A large block (several MiB per pair) through MPI_Alltoallv.
  run_one(ctx, gjFloat64, [](int from, int to) { return static_cast<std::size_t>(300000 + 17 * from + to); },
          "counts=300000+", false);
  mismatches(ctx);
  invalid(ctx);
}

}  // namespace gjt
