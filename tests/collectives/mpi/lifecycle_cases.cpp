// Communicators from MPI communicators, attributes, destroy/abort, calls on dead handles.
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "expect.h"
#include "harness.h"

namespace gjt {
namespace {

void sub_communicator(Ctx& ctx) {
  const Failure F = kLifecycle;
  MPI_Comm half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, ctx.rank % 2, ctx.rank, &half);
  gjComm_t c = nullptr;
  expect_ok(ctx, F, "gjCommInitMpi(split)", gjCommInitMpi(&c, &half));
  int rank = -1, size = -1, local_rank = -1, local_size = -1;
  expect_ok(ctx, F, "rank", gjCommRank(c, &rank), c);
  expect_ok(ctx, F, "size", gjCommSize(c, &size), c);
  expect_ok(ctx, F, "local rank", gjCommLocalRank(c, &local_rank), c);
  expect_ok(ctx, F, "local size", gjCommLocalSize(c, &local_size), c);
  const int want_size = (ctx.size + 1 - ctx.rank % 2) / 2;
  if (rank != ctx.rank / 2 || size != want_size) {
    ctx.fail(F, "split comm rank/size " + std::to_string(rank) + "/" + std::to_string(size));
  }
  // All ranks of these tests run on one node.
  if (local_rank != rank || local_size != size) {
    ctx.fail(F, "local rank/size " + std::to_string(local_rank) + "/" + std::to_string(local_size));
  }
  int v = ctx.rank + 1;
  expect_ok(ctx, F, "allreduce on split comm", gjAllReduce(&v, &v, 1, gjInt32, gjSum, c, nullptr), c);
  int want = 0;
  for (int r = ctx.rank % 2; r < ctx.size; r += 2) want += r + 1;
  if (v != want) ctx.fail(F, "split comm sum " + std::to_string(v) + " != " + std::to_string(want));
  expect_ok(ctx, F, "destroy split comm", gjCommDestroy(c));
  MPI_Comm_free(&half);
}

void dead_handles(Ctx& ctx) {
  const Failure F = kLifecycle;
  const MPI_Comm world = MPI_COMM_WORLD;
  float x = 1;
  gjComm_t c = nullptr;
  expect_ok(ctx, F, "init second comm", gjCommInitMpi(&c, &world));
  expect_ok(ctx, F, "destroy second comm", gjCommDestroy(c));
  expect_error(ctx, F, "allreduce after destroy", gjAllReduce(&x, &x, 1, gjFloat32, gjSum, c, nullptr), gjInvalidUsage,
               "is not a live communicator", c);
  int rank = 0;
  expect_error(ctx, F, "rank after destroy", gjCommRank(c, &rank), gjInvalidUsage, "gjCommRank: comm=", c);
  expect_error(ctx, F, "destroy twice", gjCommDestroy(c), gjInvalidUsage, "gjCommDestroy: comm=", c);

  gjComm_t a = nullptr;
  expect_ok(ctx, F, "init comm to abort", gjCommInitMpi(&a, &world));
  expect_ok(ctx, F, "abort", gjCommAbort(a));
  expect_error(ctx, F, "broadcast after abort", gjBroadcast(&x, 1, gjFloat32, 0, a, nullptr), gjInvalidUsage,
               "gjBroadcast: comm=", a);
  expect_error(ctx, F, "abort twice", gjCommAbort(a), gjInvalidUsage, "not a live communicator", a);

  expect_error(ctx, F, "gjCommInitWorld(NULL)", gjCommInitWorld(nullptr), gjInvalidArgument, "gjCommInitWorld: comm=NULL");
  expect_error(ctx, F, "gjCommInitMpi(mpi_comm=NULL)", gjCommInitMpi(&c, nullptr), gjInvalidArgument, "mpi_comm=NULL");
  const MPI_Comm null_comm = MPI_COMM_NULL;
  expect_error(ctx, F, "gjCommInitMpi(MPI_COMM_NULL)", gjCommInitMpi(&c, &null_comm), gjInvalidArgument, "MPI_COMM_NULL");
  expect_error(ctx, F, "gjFinalize with a live comm", gjFinalize(), gjInvalidUsage, "1 communicator(s) still alive");
}

// The environment is read when a communicator is created; the API overrides it per communicator.
void fusion_threshold(Ctx& ctx) {
  const Failure F = kLifecycle;
  const MPI_Comm world = MPI_COMM_WORLD;
  std::size_t bytes = 0;
  expect_ok(ctx, F, "default threshold", gjCommGetFusionThreshold(ctx.comm, &bytes), ctx.comm);
  if (getenv("GJ_COLL_FUSION_BYTES") == nullptr && bytes != (std::size_t{64} << 20)) {
    ctx.fail(F, "default fusion threshold " + std::to_string(bytes) + " != 64 MiB");
  }
  setenv("GJ_COLL_FUSION_BYTES", "4K", 1);
  gjComm_t c = nullptr;
  expect_ok(ctx, F, "init with GJ_COLL_FUSION_BYTES=4K", gjCommInitMpi(&c, &world));
  unsetenv("GJ_COLL_FUSION_BYTES");
  expect_ok(ctx, F, "get threshold", gjCommGetFusionThreshold(c, &bytes), c);
  if (bytes != 4096) ctx.fail(F, "GJ_COLL_FUSION_BYTES=4K gave " + std::to_string(bytes));
  expect_ok(ctx, F, "set threshold 0", gjCommSetFusionThreshold(c, 0), c);
  expect_ok(ctx, F, "get threshold", gjCommGetFusionThreshold(c, &bytes), c);
  if (bytes != 0) ctx.fail(F, "threshold after set 0: " + std::to_string(bytes));
  expect_ok(ctx, F, "destroy", gjCommDestroy(c));
}

// Several threads tear down one communicator at once: exactly one call owns it, the others
// find a handle that is no longer live (gjInvalidUsage), and nothing is freed twice.
// `abort_from`: threads with an index >= it abort instead of destroying (a destroy is
// collective, so mixing the two is only safe on one rank).
void concurrent_teardown(Ctx& ctx, const char* what, int abort_from) {
  const Failure F = kLifecycle;
  const MPI_Comm world = MPI_COMM_WORLD;
  constexpr int kThreads = 8;
  const int rounds = abort_from == 0 ? 5 : 20;  // an abort leaves its MPI communicators unfreed
  for (int round = 0; round < rounds; ++round) {
    gjComm_t c = nullptr;
    expect_ok(ctx, F, std::string(what) + ": init", gjCommInitMpi(&c, &world));
    if (c == nullptr) return;
    std::atomic<int> ready{0};
    std::atomic<int> owned{0};
    std::atomic<int> refused{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        ready.fetch_add(1);
        while (ready.load() < kThreads) std::this_thread::yield();
        const gjResult_t rc = t >= abort_from ? gjCommAbort(c) : gjCommDestroy(c);
        if (rc == gjSuccess) owned.fetch_add(1);
        if (rc == gjInvalidUsage) refused.fetch_add(1);
      });
    }
    for (std::thread& t : threads) t.join();
    if (owned.load() != 1 || refused.load() != kThreads - 1) {
      ctx.fail(F, std::string(what) + " round " + std::to_string(round) + ": " + std::to_string(owned.load()) +
                      " calls tore the communicator down and " + std::to_string(refused.load()) +
                      " were refused; want 1 and " + std::to_string(kThreads - 1));
      return;
    }
  }
}

// gjGetLastError(comm) while other threads fail calls on comm: each text read is one whole
// message, and it stays as read until this thread's next call.
void last_error_from_threads(Ctx& ctx) {
  const Failure F = kLifecycle;
  float x = 0;
  (void)gjAllReduce(nullptr, nullptr, 5, gjFloat32, gjSum, ctx.comm, nullptr);
  const std::string null_buffer = gjGetLastError(ctx.comm);
  (void)gjBroadcast(&x, 1, gjFloat32, -7, ctx.comm, nullptr);
  const std::string bad_root = gjGetLastError(ctx.comm);
  if (null_buffer.find("gjAllReduce: sendbuff=NULL") != 0 || bad_root.find("gjBroadcast: root=-7") != 0) {
    ctx.fail(F, "last errors \"" + null_buffer + "\" / \"" + bad_root + "\"");
    return;
  }
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::string first_wrong;
  std::vector<std::thread> writers;
  for (int t = 0; t < 2; ++t) {
    writers.emplace_back([&, t] {
      float y = 0;
      while (!stop.load()) {
        if (t == 0) (void)gjAllReduce(nullptr, nullptr, 5, gjFloat32, gjSum, ctx.comm, nullptr);
        else (void)gjBroadcast(&y, 1, gjFloat32, -7, ctx.comm, nullptr);
      }
    });
  }
  std::thread reader([&] {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    while (std::chrono::steady_clock::now() < end) {
      const char* text = gjGetLastError(ctx.comm);
      const std::string seen = text;
      std::this_thread::sleep_for(std::chrono::microseconds(50));  // the writers overwrite comm's text meanwhile
      const std::string later = text;
      if ((seen != null_buffer && seen != bad_root) || later != seen) {
        if (wrong.fetch_add(1) == 0) first_wrong = "read \"" + seen + "\", then \"" + later + "\"";
      }
    }
    stop.store(true);
  });
  reader.join();
  for (std::thread& t : writers) t.join();
  if (wrong.load() > 0) {
    ctx.fail(F, "gjGetLastError(comm) under concurrent failures: " + std::to_string(wrong.load()) +
                    " bad reads, first: " + first_wrong);
  }
}

}  // namespace

void run_lifecycle_cases(Ctx& ctx) {
  fusion_threshold(ctx);
  sub_communicator(ctx);
  dead_handles(ctx);
  last_error_from_threads(ctx);
  concurrent_teardown(ctx, "concurrent gjCommDestroy", 8);
  concurrent_teardown(ctx, "concurrent gjCommAbort", 0);
  if (ctx.size == 1) concurrent_teardown(ctx, "concurrent gjCommDestroy + gjCommAbort", 4);
}

}  // namespace gjt
