// Multi-process test of gj::shm::ShmAllreduce under real mpiexec (its broadcast and allgatherv
// too, each followed by an allreduce on the same engine): every dtype x op x
// in-place/out-of-place x counts around the whole/sliced switch, the slice lines and the
// chunk boundaries, with rank-dependent inputs whose result is computed independently here
// (step by step in rank order, rounding 16-bit types with the reference encoder) and, where
// MPI can do the same reduction, also compared bitwise against MPI_Allreduce.
// Arguments: "sleep" / "spin" force how ranks wait (default: the engine's choice), "mixed"
// asks for sleep on even ranks and spin on odd ones (create() must agree on one), "timeout"
// runs the dead-peer test instead.
// Exit codes: 0 ok, 2 wrong result, 3 create() returned nullptr, 4 timeout test failed,
// 5 unexpected exception.
#include <mpi.h>
#include <sys/mman.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../host/reference_half.h"
#include "dtype.h"
#include "error.h"
#include "shm/shm_allreduce.h"

namespace {

int g_rank = 0, g_size = 1;
// How ranks wait (argument "sleep" or "spin"; default: the engine's own choice).
gj::shm::ShmOptions::Wait g_wait = gj::shm::ShmOptions::Wait::Auto;

using gj::dtype_name;
using gj::op_name;
std::size_t elem_size(gjDataType_t t) { return gj::dtype_size(t); }

// Input of rank q at index i: small integers (signed types may be negative), period 11 in i.
double input(gjDataType_t t, int q, std::size_t i) {
  const auto v = static_cast<double>((i * 7 + static_cast<std::size_t>(q) * 3) % 11);
  return t == gjUint8 ? v : v - 5;
}

// Rounds a double to the dtype (16-bit types: nearest even via the reference encoder).
double round_to(gjDataType_t t, double v) {
  switch (t) {
    case gjFloat32: return static_cast<float>(v);
    case gjFloat16: return gj::host::ref::f16_value(gj::host::ref::f32_to_f16(static_cast<float>(v)));
    case gjBfloat16:
      return gj::host::ref::float_of(std::uint32_t{gj::host::ref::f32_to_bf16(static_cast<float>(v))} << 16);
    default: return v;
  }
}

template <class T>
T wrap_int(std::int64_t v) {
  return static_cast<T>(static_cast<std::uint64_t>(v));
}

// Expected element i: rank-order fold with rounding at each step (floats) or wrap (ints).
double expected(gjDataType_t t, gjRedOp_t op, std::size_t i) {
  const bool floating = t <= gjBfloat16;
  if (floating) {
    const double scale = op == gjAvg ? static_cast<double>(static_cast<float>(1.0 / g_size)) : 1.0;
    auto contrib = [&](int q) {
      if (op != gjAvg || g_size == 1) return round_to(t, input(t, q, i));
      // f64 scales by the double 1/size; f32/f16/bf16 by the float 1/size, in f32.
      if (t == gjFloat64) return input(t, q, i) * (1.0 / g_size);
      return round_to(t, static_cast<float>(input(t, q, i)) * static_cast<float>(scale));
    };
    double acc = contrib(0);
    for (int q = 1; q < g_size; ++q) {
      const double x = contrib(q);
      double r = 0;
      switch (op) {
        case gjSum: case gjAvg: r = acc + x; break;
        case gjMin: r = acc < x ? acc : x; break;
        case gjMax: r = acc > x ? acc : x; break;
        default: r = acc * x; break;
      }
      acc = t == gjFloat64 ? r : round_to(t, r);
    }
    return acc;
  }
  std::int64_t acc = static_cast<std::int64_t>(input(t, 0, i));
  for (int q = 1; q < g_size; ++q) {
    const auto x = static_cast<std::int64_t>(input(t, q, i));
    switch (op) {
      case gjSum: case gjAvg: acc += x; break;
      case gjMin: acc = acc < x ? acc : x; break;
      case gjMax: acc = acc > x ? acc : x; break;
      default: acc *= x; break;
    }
  }
  if (t == gjUint8) {
    const auto s = wrap_int<std::uint8_t>(acc);
    return op == gjAvg ? s / g_size : s;
  }
  if (t == gjInt32) {
    const auto s = wrap_int<std::int32_t>(acc);
    return op == gjAvg ? s / g_size : s;
  }
  return static_cast<double>(op == gjAvg ? acc / g_size : acc);
}

void store(gjDataType_t t, unsigned char* p, std::size_t i, double v) {
  auto put = [&](auto x) { std::memcpy(p + i * sizeof x, &x, sizeof x); };
  switch (t) {
    case gjFloat32: put(static_cast<float>(v)); break;
    case gjFloat64: put(v); break;
    case gjFloat16: put(gj::host::ref::f32_to_f16(static_cast<float>(v))); break;
    case gjBfloat16: put(gj::host::ref::f32_to_bf16(static_cast<float>(v))); break;
    case gjInt32: put(static_cast<std::int32_t>(v)); break;
    case gjInt64: put(static_cast<std::int64_t>(v)); break;
    default: put(static_cast<std::uint8_t>(v)); break;
  }
}

MPI_Datatype mpi_type(gjDataType_t t) {
  switch (t) {
    case gjFloat32: return MPI_FLOAT;
    case gjFloat64: return MPI_DOUBLE;
    case gjInt32: return MPI_INT32_T;
    case gjInt64: return MPI_INT64_T;
    case gjUint8: return MPI_UINT8_T;
    default: return MPI_DATATYPE_NULL;
  }
}

MPI_Op mpi_op(gjRedOp_t o) {
  switch (o) {
    case gjSum: return MPI_SUM;
    case gjMin: return MPI_MIN;
    case gjMax: return MPI_MAX;
    case gjProd: return MPI_PROD;
    default: return MPI_OP_NULL;
  }
}

int failures = 0;

void report(const std::string& what, std::size_t index, const std::string& detail) {
  if (++failures <= 10) {
    std::fprintf(stderr, "rank %d: %s: first wrong index %zu: %s\n", g_rank, what.c_str(), index, detail.c_str());
  }
}

void run_case(gj::shm::ShmAllreduce& engine, const std::string& engine_name, gjDataType_t t, gjRedOp_t op,
              std::size_t count, bool in_place) {
  const std::size_t es = elem_size(t);
  std::vector<unsigned char> send(count * es + 64), recv(count * es + 64, 0xAB), want(count * es + 64, 0xAB);
  // Inputs, hence results, repeat with period 11 in i: encode one period, then replicate.
  unsigned char in_period[11 * 8], want_period[11 * 8];
  for (std::size_t i = 0; i < 11; ++i) {
    store(t, in_period, i, input(t, g_rank, i));
    store(t, want_period, i, expected(t, op, i));
  }
  for (std::size_t i = 0; i < count; ++i) {
    std::memcpy(send.data() + i * es, in_period + (i % 11) * es, es);
    std::memcpy(want.data() + i * es, want_period + (i % 11) * es, es);
  }
  const std::vector<unsigned char> input_copy(send.begin(), send.begin() + static_cast<std::ptrdiff_t>(count * es));
  unsigned char* out = in_place ? send.data() : recv.data();
  if (in_place) std::memset(send.data() + count * es, 0xAB, 64);
  engine.allreduce(send.data(), out, count, t, op);

  const std::string what = engine_name + " " + dtype_name(t) + " " + op_name(op) + " count=" + std::to_string(count) +
                           (in_place ? " in-place" : " out-of-place");
  if (std::memcmp(out, want.data(), count * es + 64) != 0) {
    std::size_t i = 0;
    while (i < count && std::memcmp(out + i * es, want.data() + i * es, es) == 0) ++i;
    report(what, i, i < count ? "bytes differ from the independently computed result" : "wrote past count");
    return;
  }
  if (mpi_type(t) != MPI_DATATYPE_NULL && mpi_op(op) != MPI_OP_NULL && count > 0) {
    std::vector<unsigned char> theirs(count * es);
    MPI_Allreduce(input_copy.data(), theirs.data(), static_cast<int>(count), mpi_type(t), mpi_op(op), MPI_COMM_WORLD);
    if (std::memcmp(out, theirs.data(), count * es) != 0) {
      std::size_t i = 0;
      while (std::memcmp(out + i * es, theirs.data() + i * es, es) == 0) ++i;
      report(what, i, "differs from MPI_Allreduce");
    }
  }
}

// allreduce_group gives the bits of one allreduce per tensor (in place and out of place,
// alternating by tensor), for every dtype x op, over tensor lists whose totals fall on both
// sides of the whole/sliced switch and span several chunks, with empty tensors first, last
// and in between, and tensors that straddle chunk and slice boundaries.
void group_case(gj::shm::ShmAllreduce& engine, gjDataType_t t, gjRedOp_t op, const std::vector<std::size_t>& counts,
                const std::string& shape) {
  const std::size_t es = elem_size(t);
  const std::size_t n = counts.size();
  std::vector<std::vector<unsigned char>> in(n), out(n), want(n);
  std::vector<const void*> sends;
  std::vector<void*> recvs;
  for (std::size_t k = 0; k < n; ++k) {
    in[k].resize(counts[k] * es + 1);  // + 1: never a zero-size vector's null data()
    out[k].assign(counts[k] * es + 1, 0xAB);
    for (std::size_t i = 0; i < counts[k]; ++i) store(t, in[k].data(), i, input(t, g_rank, i + 3 * k));
    want[k] = in[k];
    engine.allreduce(want[k].data(), want[k].data(), counts[k], t, op);
    want[k].back() = 0xAB;
    sends.push_back(in[k].data());
    recvs.push_back(k % 2 == 0 ? out[k].data() : static_cast<void*>(in[k].data()));
    if (k % 2 == 1) in[k].back() = 0xAB;
  }
  engine.allreduce_group(sends.data(), recvs.data(), counts.data(), static_cast<int>(n), t, op);
  for (std::size_t k = 0; k < n; ++k) {
    const auto* got = static_cast<const unsigned char*>(recvs[k]);
    if (std::memcmp(got, want[k].data(), counts[k] * es + 1) != 0) {
      std::size_t i = 0;
      while (i < counts[k] && std::memcmp(got + i * es, want[k].data() + i * es, es) == 0) ++i;
      report(std::string("allreduce_group ") + shape + " " + dtype_name(t) + " " + op_name(op) + " tensor " +
                 std::to_string(k) + " count=" + std::to_string(counts[k]),
             i, i < counts[k] ? "differs from a per-tensor allreduce" : "wrote past count");
    }
  }
}

// Tensor lists in elements of a dtype of es bytes, for an engine with 64 KiB chunks.
std::vector<std::pair<std::string, std::vector<std::size_t>>> group_shapes(std::size_t es) {
  const std::size_t chunk = 64 * 1024 / es, line = 64 / es;
  std::vector<std::size_t> many;  // a ResNet-like mix: many small tensors, a few large ones
  for (std::size_t k = 0; k < 40; ++k) many.push_back(k % 7 == 0 ? 0 : (k * 37 + 5) % 900 + (k % 9 == 0 ? chunk : 0));
  return {
      {"empty", {0, 0}},
      {"one", {0, 5, 0}},
      {"small", {1, 0, 7, line + 1, 3, 0}},
      {"whole-edge", {32 * 1024 / es - 10, 10}},
      {"just-sliced", {32 * 1024 / es - 10, 11}},
      {"straddle", {0, chunk - 1, 2, chunk / 2 + 1, chunk / 2 + line, 0, 3 * chunk + 5, 1}},
      {"many", many},
  };
}

// Outputs the kernel has not mapped yet (a fresh torch.empty_like tensor above malloc's mmap
// threshold), which the engine faults in before its chunk loop: at an offset that is not
// page-aligned, so the edge pages (left alone by the prefault) are written by the copies, and
// in a group beside a small heap output and an in-place tensor. The results must equal the
// same calls into ordinary vectors, with nothing written around them.
void fresh_output_case(gj::shm::ShmAllreduce& engine) {
  const gjDataType_t t = gjFloat32;
  const std::size_t es = 4, big = (3u << 20) / es + 3, small = 1000, off = 100;
  const std::size_t map_bytes = big * es + 2 * off + (1u << 16);
  struct Fresh {
    explicit Fresh(std::size_t n) : bytes(n), p(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) {
      if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
    }
    ~Fresh() { munmap(p, bytes); }
    unsigned char* at(std::size_t o) const { return static_cast<unsigned char*>(p) + o; }
    std::size_t bytes;
    void* p;
  };
  std::vector<unsigned char> send(big * es), want(big * es), in_place(small * es), want_small(small * es);
  for (std::size_t i = 0; i < big; ++i) store(t, send.data(), i, input(t, g_rank, i));
  for (std::size_t i = 0; i < small; ++i) store(t, in_place.data(), i, input(t, g_rank, i + 7));
  engine.allreduce(send.data(), want.data(), big, t, gjSum);
  engine.allreduce(in_place.data(), want_small.data(), small, t, gjSum);
  const std::vector<unsigned char> zeros(off, 0);
  const auto check = [&](const Fresh& m, const std::string& what) {
    if (std::memcmp(m.at(off), want.data(), big * es) != 0) report(what, 0, "differs from the same call into a vector");
    if (std::memcmp(m.at(0), zeros.data(), off) != 0 || std::memcmp(m.at(off + big * es), zeros.data(), off) != 0) {
      report(what, big, "wrote outside the output");
    }
  };
  {
    Fresh out(map_bytes);
    engine.allreduce(send.data(), out.at(off), big, t, gjSum);
    check(out, "fresh output allreduce");
  }
  {
    Fresh out(map_bytes);
    std::vector<unsigned char> heap(small * es);
    const std::vector<unsigned char> small_in(in_place);  // tensors of a group must not overlap
    const void* sends[] = {small_in.data(), send.data(), in_place.data()};
    void* recvs[] = {heap.data(), out.at(off), in_place.data()};
    const std::size_t counts[] = {small, big, small};
    engine.allreduce_group(sends, recvs, counts, 3, t, gjSum);
    check(out, "fresh output allreduce_group");
    if (std::memcmp(heap.data(), want_small.data(), small * es) != 0 ||
        std::memcmp(in_place.data(), want_small.data(), small * es) != 0) {
      report("fresh output allreduce_group, small tensors", 0, "differs from the same call into a vector");
    }
  }
}

// broadcast: root's bytes on every rank and nothing past them, for every root and sizes around
// the chunk boundaries (0 is the signal), each followed by an allreduce on the same engine so
// that both kinds of call share the stage numbers and slots.
void broadcast_case(gj::shm::ShmAllreduce& engine, int root, std::size_t bytes) {
  const auto pattern = [&](std::size_t i) { return static_cast<unsigned char>((i * 31 + 7 * static_cast<std::size_t>(root) + 1) % 251); };
  std::vector<unsigned char> buf(bytes + 64, 0xEE), want(bytes + 64, 0xEE);
  for (std::size_t i = 0; i < bytes; ++i) want[i] = pattern(i);
  if (g_rank == root) std::memcpy(buf.data(), want.data(), bytes);
  engine.broadcast(bytes > 0 ? buf.data() : nullptr, bytes, root);
  if (std::memcmp(buf.data(), want.data(), bytes + 64) != 0) {
    std::size_t i = 0;
    while (i < bytes && buf[i] == want[i]) ++i;
    report("broadcast root=" + std::to_string(root) + " bytes=" + std::to_string(bytes), i,
           i < bytes ? "not root's byte" : "wrote past bytes");
  }
  run_case(engine, "after broadcast", gjFloat32, gjSum, 1000 + bytes % 4096, false);
}

// allgatherv: every rank's block (its own pattern, block_bytes(q) bytes) at its offset on every
// rank, nothing written past the blocks, in place (send = this rank's block of recv) or not;
// blocks of different sizes, some empty, around the chunk boundaries. Then an allreduce on the
// same engine (shared stage numbers and slots).
void allgather_case(gj::shm::ShmAllreduce& engine, const std::vector<std::size_t>& bytes, bool in_place,
                    const std::string& shape) {
  const auto pattern = [](int q, std::size_t i) {
    return static_cast<unsigned char>((i * 13 + 29 * static_cast<std::size_t>(q) + 3) % 251);
  };
  std::size_t total = 0, at = 0;
  for (int q = 0; q < g_size; ++q) {
    if (q == g_rank) at = total;
    total += bytes[static_cast<std::size_t>(q)];
  }
  std::vector<unsigned char> recv(total + 64, 0xEE), want(total + 64, 0xEE), send;
  for (int q = 0, off = 0; q < g_size; off += static_cast<int>(bytes[static_cast<std::size_t>(q)]), ++q) {
    for (std::size_t i = 0; i < bytes[static_cast<std::size_t>(q)]; ++i) want[off + i] = pattern(q, i);
  }
  const std::size_t mine = bytes[static_cast<std::size_t>(g_rank)];
  for (std::size_t i = 0; i < mine; ++i) send.push_back(pattern(g_rank, i));
  const void* from = send.data();
  if (in_place) {
    if (mine > 0) std::memcpy(recv.data() + at, send.data(), mine);
    from = recv.data() + at;
  }
  engine.allgatherv(from, recv.data(), bytes.data());
  if (std::memcmp(recv.data(), want.data(), total + 64) != 0) {
    std::size_t i = 0;
    while (i < total + 64 && recv[i] == want[i]) ++i;
    report("allgatherv " + shape + (in_place ? " in place" : ""), i,
           i < total ? "not the block's byte" : "wrote past the blocks");
  }
  run_case(engine, "after allgatherv", gjFloat32, gjSum, 1000 + total % 4096, false);
}

// Block sizes per rank for allgather_case: equal, rank-dependent around the chunk, some empty.
std::vector<std::pair<std::string, std::vector<std::size_t>>> gather_shapes(std::size_t chunk) {
  std::vector<std::pair<std::string, std::vector<std::size_t>>> out;
  for (std::size_t b : {std::size_t{1}, std::size_t{63}, chunk - 1, chunk, chunk + 1, 3 * chunk + 7}) {
    out.emplace_back("equal " + std::to_string(b), std::vector<std::size_t>(static_cast<std::size_t>(g_size), b));
  }
  std::vector<std::size_t> ragged, one_empty, only_last;
  for (int q = 0; q < g_size; ++q) {
    const auto uq = static_cast<std::size_t>(q);
    ragged.push_back(uq * chunk + 17 * uq + 5);  // rank 0: 5 bytes; later ranks span more chunks
    one_empty.push_back(q == 0 ? 0 : 2 * chunk + uq);
    only_last.push_back(q == g_size - 1 ? chunk + 3 : 0);
  }
  out.emplace_back("ragged", ragged);
  out.emplace_back("rank 0 empty", one_empty);
  out.emplace_back("only the last rank", only_last);
  out.emplace_back("all empty", std::vector<std::size_t>(static_cast<std::size_t>(g_size), 0));
  return out;
}

// Rank 1 stays away from an allreduce, from a broadcast it roots, then from an allgatherv:
// rank 0 must get gjTimeout after about timeout_ms, and gjInvalidUsage on the next call.
int timeout_test() {
  gj::shm::ShmOptions opt;
  opt.timeout_ms = 300;
  opt.wait = g_wait;
  std::vector<float> x(100000, 1.0f);
  using Call = void (*)(gj::shm::ShmAllreduce&, std::vector<float>&);
  const std::pair<const char*, Call> calls[] = {
      {"allreduce", [](gj::shm::ShmAllreduce& e, std::vector<float>& v) { e.allreduce(v.data(), v.data(), v.size(), gjFloat32, gjSum); }},
      {"broadcast", [](gj::shm::ShmAllreduce& e, std::vector<float>& v) { e.broadcast(v.data(), v.size() * sizeof(float), 1); }},
      {"allgatherv", [](gj::shm::ShmAllreduce& e, std::vector<float>& v) {
         const std::vector<std::size_t> each(static_cast<std::size_t>(g_size), v.size() * sizeof(float) / g_size);
         std::vector<float> out(v.size());
         e.allgatherv(v.data(), out.data(), each.data());
       }},
  };
  int rc = 0;
  for (const auto& [name, call] : calls) {
    std::string why;
    auto engine = gj::shm::ShmAllreduce::create(MPI_COMM_WORLD, opt, &why);
    if (!engine) return 3;
    if (g_rank != 0) {
      MPI_Barrier(MPI_COMM_WORLD);
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    gjResult_t first = gjSuccess, second = gjSuccess;
    try {
      call(*engine, x);
    } catch (const gj::Error& e) {
      first = e.code();
      std::fprintf(stderr, "rank 0: expected timeout of the %s: %s\n", name, e.what());
    }
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
    try {
      call(*engine, x);
    } catch (const gj::Error& e) {
      second = e.code();
    }
    if (first != gjTimeout || second != gjInvalidUsage || ms < 300 || ms > 5000) {
      std::fprintf(stderr, "rank 0: %s timeout test: first=%d second=%d after %lld ms\n", name, first, second,
                   static_cast<long long>(ms));
      rc = 4;
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  int rc = 0;
  try {
    bool timeout = false;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "timeout") timeout = true;
      else if (a == "sleep") g_wait = gj::shm::ShmOptions::Wait::Sleep;
      else if (a == "spin") g_wait = gj::shm::ShmOptions::Wait::Spin;
      else if (a == "mixed") {
        g_wait = g_rank % 2 == 0 ? gj::shm::ShmOptions::Wait::Sleep : gj::shm::ShmOptions::Wait::Spin;
      }
      else throw std::invalid_argument("unknown argument '" + a + "' (want timeout, sleep, spin, mixed)");
    }
    if (timeout) {
      rc = g_size >= 2 ? timeout_test() : 0;
    } else {
      std::string why;
      gj::shm::ShmOptions small, normal;
      small.chunk_bytes = 64 * 1024;  // many chunks from modest counts
      small.wait = normal.wait = g_wait;
      auto chunked = gj::shm::ShmAllreduce::create(MPI_COMM_WORLD, small, &why);
      auto standard = gj::shm::ShmAllreduce::create(MPI_COMM_WORLD, normal, &why);
      if (!chunked || !standard) {
        std::fprintf(stderr, "rank %d: ShmAllreduce::create returned nullptr: %s\n", g_rank, why.c_str());
        rc = 3;
      } else {
        const gjDataType_t types[] = {gjFloat32, gjFloat64, gjFloat16, gjBfloat16, gjInt32, gjInt64, gjUint8};
        const gjRedOp_t ops[] = {gjSum, gjAvg, gjMin, gjMax, gjProd};
        for (gjDataType_t t : types) {
          const std::size_t es = elem_size(t);
          const std::size_t whole = 32 * 1024 / es, chunk = 64 * 1024 / es;
          const std::size_t counts[] = {0, 1, 2, 7, 64 / es, 64 / es + 1, 1000, whole, whole + 1,
                                        chunk - 1, chunk, chunk + 1, 2 * chunk + 13, 5 * chunk + 7};
          for (gjRedOp_t op : ops) {
            for (std::size_t n : counts) {
              for (bool in_place : {false, true}) run_case(*chunked, "chunk64k", t, op, n, in_place);
            }
          }
          // Larger than the standard engine's 2 x 1 MiB slots: several passes through them.
          for (bool in_place : {false, true}) run_case(*standard, "standard", t, gjAvg, (3u << 20) / es + 3, in_place);
        }
        for (gjDataType_t t : types) {
          for (gjRedOp_t op : ops) {
            for (const auto& [shape, counts] : group_shapes(elem_size(t))) group_case(*chunked, t, op, counts, shape);
          }
        }
        const std::size_t chunk = 64 * 1024;
        for (int root = 0; root < g_size; ++root) {
          for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{63}, chunk - 1, chunk, chunk + 1,
                                    5 * chunk + 7}) {
            broadcast_case(*chunked, root, bytes);
          }
        }
        broadcast_case(*standard, g_size - 1, (3u << 20) + 5);
        for (const auto& [shape, bytes] : gather_shapes(chunk)) {
          for (bool in_place : {false, true}) allgather_case(*chunked, bytes, in_place, shape);
        }
        allgather_case(*standard, std::vector<std::size_t>(static_cast<std::size_t>(g_size), (3u << 20) + 5), false,
                       "standard, 3 MiB + 5 each");
        fresh_output_case(*standard);
        fresh_output_case(*chunked);
        if (failures > 0) rc = 2;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: unexpected exception: %s\n", g_rank, e.what());
    rc = 5;
  }
  int worst = rc;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf("shm allreduce test on %d ranks: %s\n", g_size, worst == 0 ? "ok" : "FAILED");
  MPI_Finalize();
  return worst;
}
