// collectives.hpp: RAII, typed overloads, typed exceptions carrying the result code.
#include <mpi.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gj/collectives.hpp"
#include "harness.h"

namespace gjt {
namespace {

template <class E, class F>
void expect_throw(Ctx& ctx, const std::string& name, gjResult_t code, const std::string& substring, F&& f) {
  try {
    f();
    ctx.fail(kCppWrapper, name + ": did not throw");
  } catch (const E& e) {
    if (e.code() != code) ctx.fail(kCppWrapper, name + ": code " + gjGetErrorString(e.code()));
    if (std::string(e.what()).find(substring) == std::string::npos) {
      ctx.fail(kCppWrapper, name + ": what() \"" + e.what() + "\" lacks \"" + substring + "\"");
    }
  } catch (const std::exception& e) {
    ctx.fail(kCppWrapper, name + ": wrong exception type: " + e.what());
  }
}

}  // namespace

void run_cpp_cases(Ctx& ctx) {
  try {
    gj::Communicator comm = gj::Communicator::from_mpi(MPI_COMM_WORLD);
    if (comm.rank() != ctx.rank || comm.size() != ctx.size) ctx.fail(kCppWrapper, "rank/size");
    if (comm.backend(false) != gjBackendMpi) ctx.fail(kCppWrapper, "host backend");

    {  // allgather / allgatherv / reduce-scatter / split / requests
      const std::size_t n = static_cast<std::size_t>(ctx.size);
      std::vector<std::int16_t> mine(2, static_cast<std::int16_t>(ctx.rank)), all(2 * n, -1);
      comm.allgather(mine.data(), all.data(), 2);
      for (std::size_t q = 0; q < n; ++q) {
        if (all[2 * q + 1] != static_cast<std::int16_t>(q)) ctx.fail(kCppWrapper, "allgather i16");
      }
      std::vector<std::size_t> counts(n, 1);
      counts[0] = 3;
      bool flags[3] = {ctx.rank == 0, true, false};
      std::vector<unsigned char> flag_bytes(n + 2);
      comm.allgatherv(flags, reinterpret_cast<bool*>(flag_bytes.data()), std::vector<std::size_t>(counts));
      if (flag_bytes[0] != 1 || flag_bytes[1] != 1 || flag_bytes[2] != 0) ctx.fail(kCppWrapper, "allgatherv bool");
      std::vector<double> in(n + 2, 1.0), out(counts[static_cast<std::size_t>(ctx.rank)]);
      comm.reduce_scatter(in.data(), out.data(), counts, gjSum, 2.0, 0.5);
      for (double v : out) {
        if (v != static_cast<double>(ctx.size)) ctx.fail(kCppWrapper, "reduce_scatter scaled");
      }
      std::vector<float> g(100, 1.0f);
      gj::Request r = comm.iallreduce(g.data(), g.size(), gjSum);
      while (!r.test()) {
      }
      if (r.pending() || g[99] != static_cast<float>(ctx.size)) ctx.fail(kCppWrapper, "Request::test");
      { gj::Request scoped = comm.iallreduce(g.data(), g.size(), gjSum); }  // waits when destroyed
      if (g[0] != static_cast<float>(ctx.size * ctx.size)) ctx.fail(kCppWrapper, "~Request did not wait");
      gj::Request b = comm.ibarrier();
      b.wait();
      std::vector<std::int64_t> control{ctx.rank, -ctx.rank};
      comm.icontrol_max(control).wait();
      if (control[0] != ctx.size - 1 || control[1] != 0) ctx.fail(kCppWrapper, "icontrol_max");
      expect_throw<gj::InvalidUsageError>(ctx, "wait on an empty Request", gjInvalidUsage, "gjWait: request=NULL",
                                          [&] { b.wait(); });
      comm.barrier();
      gj::Communicator self = comm.split(ctx.rank, 0);
      if (!self || self.size() != 1) ctx.fail(kCppWrapper, "split by rank");
    }

    std::vector<float> f(5, static_cast<float>(ctx.rank + 1));
    comm.allreduce(f, gjSum);
    const float want = static_cast<float>(ctx.size * (ctx.size + 1) / 2);
    for (float v : f) {
      if (v != want) ctx.fail(kCppWrapper, "vector<float> sum " + std::to_string(v));
    }
    std::vector<std::int64_t> params(3, ctx.rank == 0 ? 42 : -1);
    comm.broadcast(params, 0);
    if (params != std::vector<std::int64_t>(3, 42)) ctx.fail(kCppWrapper, "vector<int64_t> broadcast");

    std::uint8_t bytes_in[2] = {1, 2};
    std::uint8_t bytes_out[2] = {};
    comm.allreduce(bytes_in, bytes_out, 2, gjMax);
    if (bytes_out[0] != 1 || bytes_out[1] != 2) ctx.fail(kCppWrapper, "uint8_t max");

    std::vector<double> a(3, 1.0), b(1000, 2.0);
    comm.grouped_allreduce<double>({{a.data(), a.size()}, {b.data(), b.size()}}, gjAvg);
    if (a[2] != 1.0 || b[999] != 2.0) ctx.fail(kCppWrapper, "grouped avg");

    expect_throw<gj::InvalidArgumentError>(ctx, "typed null buffer", gjInvalidArgument, "recvbuff=NULL",
                                           [&] { comm.allreduce<float>(f.data(), nullptr, 5, gjSum); });
    expect_throw<gj::InvalidArgumentError>(ctx, "bad root", gjInvalidArgument, "root=-3",
                                           [&] { comm.broadcast(params, -3); });
    if (comm.backend(false) == gjBackendMpi && ctx.size > 0) {
      try {
        (void)comm.backend(true);
      } catch (const gj::UnsupportedError& e) {
        if (e.code() != gjUnsupported) ctx.fail(kCppWrapper, "UnsupportedError code");
      }
    }

    gj::Communicator moved = std::move(comm);
    if (comm || !moved) ctx.fail(kCppWrapper, "move did not transfer the handle");
    expect_throw<gj::InvalidUsageError>(ctx, "moved-from", gjInvalidUsage, "comm=NULL", [&] { (void)comm.rank(); });
    gjComm_t dead = moved.handle();
    moved.destroy();
    expect_throw<gj::InvalidUsageError>(ctx, "after destroy", gjInvalidUsage, "not a live communicator", [&] {
      gj::check(gjCommRank(dead, nullptr), dead);
    });
  } catch (const gj::CollectivesError& e) {
    ctx.fail(kCppWrapper, std::string("unexpected exception: ") + e.what());
  }
}

}  // namespace gjt
