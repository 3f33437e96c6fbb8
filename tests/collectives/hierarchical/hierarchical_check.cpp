// The hierarchical host path across nodes (run by the multi-host scenario s15_hierarchical.sh
// on namespaced pods: 1 rank on the master, 2 on each worker). Every collective runs twice, on a
// communicator with the two-level path (the default) and on one with GJ_COLL_HIERARCHICAL=0
// (the flat MPI collectives): results must be bitwise equal wherever the reduction order cannot
// matter (integers, min, max, and floating sums and products of exactly representable values;
// movement is byte-exact), and equal the independently computed expectation. Float avg
// (divide-then-sum of inexact quotients) is compared within a tolerance: its order differs.
// Output: rank 0 prints one first line, "PASSED ..." or "FAILED <cases>", then the details,
// then "HOSTS <host of rank 0> <host of rank 1> ...".
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "../mpi/elements.h"
#include "gj/collectives.h"

namespace {

using gjt::decode;
using gjt::dname;
using gjt::encode;
using gjt::oname;

struct Checker {
  int rank = 0, size = 1;
  gjComm_t hier = nullptr, flat = nullptr;
  int cases = 0;
  std::map<std::string, int> failed;  // case family -> failures on this rank
  std::vector<std::string> details;

  void fail(const std::string& family, const std::string& what) {
    if (failed[family]++ < 3 && details.size() < 30) details.push_back("[rank " + std::to_string(rank) + "] " + what);
  }
  bool ok(const std::string& family, const std::string& name, gjResult_t rc, gjComm_t comm) {
    if (rc == gjSuccess) return true;
    fail(family, name + ": " + gjGetErrorString(rc) + ": " + gjGetLastError(comm));
    return false;
  }
};

// Values whose every reduction is exact in every dtype for up to 8 ranks.
double value(gjRedOp_t op, gjDataType_t d, int rank, std::size_t i) {
  const bool unsig = d == gjUint8;
  switch (op) {
    case gjProd: return 1.0 + ((rank + i) % 4 == 0);
    case gjMin: case gjMax: return static_cast<double>((rank * 7 + i * 3) % 11) - (unsig ? 0 : 5);
    default: return static_cast<double>((rank * 3 + i) % 9) - (unsig ? 0 : 4);
  }
}

double expected(gjRedOp_t op, gjDataType_t d, int size, std::size_t i) {
  double acc = value(op, d, 0, i);
  for (int r = 1; r < size; ++r) {
    const double v = value(op, d, r, i);
    switch (op) {
      case gjSum: case gjAvg: acc += v; break;
      case gjProd: acc *= v; break;
      case gjMin: acc = std::min(acc, v); break;
      case gjMax: acc = std::max(acc, v); break;
      default: break;
    }
  }
  if (op == gjAvg) acc = gjt::is_float(d) ? acc / size : std::trunc(acc / size);
  return acc;
}

std::vector<unsigned char> fill(gjRedOp_t op, gjDataType_t d, int rank, std::size_t n, std::size_t first = 0) {
  const std::size_t es = gjDataTypeSize(d);
  std::vector<unsigned char> b(n * es + 1);
  for (std::size_t i = 0; i < n; ++i) encode(d, value(op, d, rank, first + i), b.data() + i * es);
  return b;
}

double tolerance(gjDataType_t d) {
  return d == gjFloat16 || d == gjBfloat16 ? 2e-2 : d == gjFloat32 ? 1e-6 : 1e-13;
}

// got (hierarchical) against flat bitwise (unless float avg) and against the expectation of
// elements [first, first + n) of the reduced vector.
void compare(Checker& ck, const std::string& family, const std::string& name, gjRedOp_t op, gjDataType_t d,
             const unsigned char* got, const unsigned char* flat, std::size_t n, std::size_t first) {
  const std::size_t es = gjDataTypeSize(d);
  const bool exact = !(op == gjAvg && gjt::is_float(d));
  for (std::size_t i = 0; i < n; ++i) {
    const double want = expected(op, d, ck.size, first + i);
    const double g = decode(d, got + i * es);
    if (exact && std::memcmp(got + i * es, flat + i * es, es) != 0) {
      ck.fail(family, name + ": element " + std::to_string(i) + " hierarchical " + std::to_string(g) + " != flat " +
                          std::to_string(decode(d, flat + i * es)));
      return;
    }
    const bool close = exact ? g == want : std::fabs(g - want) <= tolerance(d) * std::max(1.0, std::fabs(want));
    if (!close) {
      ck.fail(family, name + ": element " + std::to_string(i) + " = " + std::to_string(g) + ", expected " +
                          std::to_string(want));
      return;
    }
  }
}

void allreduce_cases(Checker& ck) {
  for (gjDataType_t d : gjt::kDtypes) {
    for (gjRedOp_t op : gjt::kOps) {
      // Small (the engine's inline and whole-message paths) out of place, large (sliced) in
      // place, and from 1 MiB in every dtype (the leaders' ring) in place.
      for (std::size_t n : {std::size_t{7}, std::size_t{70001}, std::size_t{(1 << 20) + 4099}}) {
        {
          const bool in_place = n > 7;
          const std::string name = std::string("allreduce ") + dname(d) + " " + oname(op) + " n=" + std::to_string(n) +
                                   (in_place ? " in-place" : "");
          ++ck.cases;
          const auto input = fill(op, d, ck.rank, n);
          auto h = input, f = input;
          std::vector<unsigned char> ho(h.size()), fo(f.size());
          unsigned char* hr = in_place ? h.data() : ho.data();
          unsigned char* fr = in_place ? f.data() : fo.data();
          if (!ck.ok("allreduce", name, gjAllReduce(h.data(), hr, n, d, op, ck.hier, nullptr), ck.hier)) continue;
          if (!ck.ok("allreduce", name, gjAllReduce(f.data(), fr, n, d, op, ck.flat, nullptr), ck.flat)) continue;
          compare(ck, "allreduce", name, op, d, hr, fr, n, 0);
        }
      }
    }
  }
  // Several pipeline chunks of the node engine; scaling (exact factors) applied once.
  ++ck.cases;
  const std::size_t n = 300007;
  auto h = fill(gjSum, gjFloat32, ck.rank, n), f = h;
  if (ck.ok("allreduce", "allreduce f32 sum n=300007 scaled", gjAllReduceScaled(h.data(), h.data(), n, gjFloat32, gjSum,
                                                                                 0.5, 2.0, ck.hier, nullptr), ck.hier) &&
      ck.ok("allreduce", "allreduce f32 sum n=300007 scaled", gjAllReduceScaled(f.data(), f.data(), n, gjFloat32, gjSum,
                                                                                 0.5, 2.0, ck.flat, nullptr), ck.flat)) {
    compare(ck, "allreduce", "allreduce f32 sum n=300007 scaled 0.5/2", gjSum, gjFloat32, h.data(), f.data(), n, 0);
  }
}

void grouped_cases(Checker& ck) {
  const std::vector<std::size_t> counts = {3, 0, 1025, 70001, 5, 40000};
  // Every dtype x op fused whole; a small threshold (several groups, large tensors alone) for two ops.
  for (std::size_t threshold : {std::size_t{64} << 20, std::size_t{4096}}) {
    gjCommSetFusionThreshold(ck.hier, threshold);
    for (gjDataType_t d : gjt::kDtypes) {
      for (gjRedOp_t op : gjt::kOps) {
        if (threshold == 4096 && op != gjSum && op != gjMax) continue;
        const std::string name = std::string("grouped ") + dname(d) + " " + oname(op) + " threshold=" +
                                 std::to_string(threshold);
        ++ck.cases;
        std::vector<std::vector<unsigned char>> h, f;
        std::vector<void*> hp, fp;
        std::size_t first = 0;
        for (std::size_t c : counts) {
          h.push_back(fill(op, d, ck.rank, c, first));
          f.push_back(h.back());
          first += c;
        }
        for (std::size_t t = 0; t < counts.size(); ++t) {
          hp.push_back(h[t].data());
          fp.push_back(f[t].data());
        }
        if (!ck.ok("grouped", name, gjGroupedAllReduce(hp.data(), hp.data(), counts.data(), static_cast<int>(counts.size()),
                                                       d, op, ck.hier, nullptr), ck.hier)) continue;
        bool ran = true;
        for (std::size_t t = 0; t < counts.size() && ran; ++t) {  // per tensor, flat
          ran = ck.ok("grouped", name, gjAllReduce(fp[t], fp[t], counts[t], d, op, ck.flat, nullptr), ck.flat);
        }
        if (!ran) continue;
        first = 0;
        for (std::size_t t = 0; t < counts.size(); ++t) {
          compare(ck, "grouped", name + " tensor " + std::to_string(t), op, d, h[t].data(), f[t].data(), counts[t], first);
          first += counts[t];
        }
      }
    }
  }
  gjCommSetFusionThreshold(ck.hier, std::size_t{64} << 20);
}

// Horovod's split: the first total % size ranks get one more.
std::vector<std::size_t> split(std::size_t total, int size) {
  std::vector<std::size_t> c(static_cast<std::size_t>(size), total / static_cast<std::size_t>(size));
  for (std::size_t r = 0; r < total % static_cast<std::size_t>(size); ++r) ++c[r];
  return c;
}

void reduce_scatter_cases(Checker& ck) {
  for (gjDataType_t d : gjt::kDtypes) {
    for (gjRedOp_t op : gjt::kOps) {
      // Fewer elements than ranks (zero counts) out of place; several engine windows in place.
      for (std::size_t total : {std::size_t{3}, std::size_t{70003}}) {
        {
          const bool in_place = total > 3;
          const std::string name = std::string("reduce-scatter ") + dname(d) + " " + oname(op) + " total=" +
                                   std::to_string(total) + (in_place ? " in-place" : "");
          ++ck.cases;
          const auto counts = split(total, ck.size);
          std::size_t offset = 0;
          for (int r = 0; r < ck.rank; ++r) offset += counts[static_cast<std::size_t>(r)];
          const std::size_t es = gjDataTypeSize(d), mine = counts[static_cast<std::size_t>(ck.rank)];
          auto h = fill(op, d, ck.rank, total), f = h;
          std::vector<unsigned char> ho(mine * es + 1), fo(mine * es + 1);
          unsigned char* hr = in_place ? h.data() + offset * es : ho.data();
          unsigned char* fr = in_place ? f.data() + offset * es : fo.data();
          if (!ck.ok("reduce-scatter", name, gjReduceScatter(h.data(), hr, counts.data(), d, op, 1.0, 1.0, ck.hier, nullptr),
                     ck.hier)) continue;
          if (!ck.ok("reduce-scatter", name, gjReduceScatter(f.data(), fr, counts.data(), d, op, 1.0, 1.0, ck.flat, nullptr),
                     ck.flat)) continue;
          compare(ck, "reduce-scatter", name, op, d, hr, fr, mine, offset);
        }
      }
    }
  }
}

unsigned char byte_of(int rank, std::size_t i) { return static_cast<unsigned char>((rank * 31 + i * 7 + 1) & 0xff); }

void allgather_cases(Checker& ck) {
  const std::size_t s = static_cast<std::size_t>(ck.size);
  const std::vector<std::pair<const char*, std::vector<std::size_t>>> shapes = [&] {
    std::vector<std::size_t> equal(s, 1025), growing(s), odd_zero(s), last(s, 0);
    for (std::size_t r = 0; r < s; ++r) {
      growing[r] = 1 + r * 7001;
      odd_zero[r] = r % 2 ? 0 : 513;
    }
    last[s - 1] = 70001;
    return std::vector<std::pair<const char*, std::vector<std::size_t>>>{
        {"equal", equal}, {"growing", growing}, {"zero-on-odd", odd_zero}, {"last-only", last}};
  }();
  for (gjDataType_t d : gjt::kAllDtypes) {
    const std::size_t es = gjDataTypeSize(d);
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      const auto& [shape, counts] = shapes[k];
      {
        const bool in_place = k % 2 == 1;
        const std::string name = std::string("allgather ") + dname(d) + " " + shape + (in_place ? " in-place" : "");
        ++ck.cases;
        std::size_t total = 0, at = 0;
        for (std::size_t r = 0; r < s; ++r) {
          if (static_cast<int>(r) == ck.rank) at = total;
          total += counts[r] * es;
        }
        const std::size_t mine = counts[static_cast<std::size_t>(ck.rank)] * es;
        std::vector<unsigned char> send(mine + 1), h(total + 1, 0xEE), f(total + 1, 0xEE), want(total + 1, 0xEE);
        for (std::size_t i = 0; i < mine; ++i) send[i] = byte_of(ck.rank, i);
        std::size_t displ = 0;
        for (std::size_t r = 0; r < s; ++r) {
          for (std::size_t i = 0; i < counts[r] * es; ++i) want[displ + i] = byte_of(static_cast<int>(r), i);
          displ += counts[r] * es;
        }
        if (in_place && mine > 0) {
          std::memcpy(h.data() + at, send.data(), mine);
          std::memcpy(f.data() + at, send.data(), mine);
        }
        const void* hs = in_place ? h.data() + at : send.data();
        const void* fs = in_place ? f.data() + at : send.data();
        if (!ck.ok("allgather", name, gjAllGatherV(hs, h.data(), counts.data(), d, ck.hier, nullptr), ck.hier)) continue;
        if (!ck.ok("allgather", name, gjAllGatherV(fs, f.data(), counts.data(), d, ck.flat, nullptr), ck.flat)) continue;
        if (h != f) ck.fail("allgather", name + ": hierarchical != flat");
        else if (h != want) ck.fail("allgather", name + ": result differs from the ranks' blocks");
      }
    }
  }
}

void broadcast_cases(Checker& ck) {
  for (gjDataType_t d : gjt::kAllDtypes) {
    const std::size_t es = gjDataTypeSize(d);
    for (int root = 0; root < ck.size; ++root) {
      for (std::size_t n : {std::size_t{1025}, std::size_t{70001}}) {
        if (n > 1025 && d != gjByte) continue;  // large: bytes only (movement is byte-wise)
        const std::string name = std::string("broadcast ") + dname(d) + " root=" + std::to_string(root) + " n=" +
                                 std::to_string(n);
        ++ck.cases;
        std::vector<unsigned char> h(n * es), want(n * es);
        for (std::size_t i = 0; i < want.size(); ++i) {
          want[i] = byte_of(root, i);
          h[i] = byte_of(ck.rank, i);
        }
        auto f = h;
        if (!ck.ok("broadcast", name, gjBroadcast(h.data(), n, d, root, ck.hier, nullptr), ck.hier)) continue;
        if (!ck.ok("broadcast", name, gjBroadcast(f.data(), n, d, root, ck.flat, nullptr), ck.flat)) continue;
        if (h != f) ck.fail("broadcast", name + ": hierarchical != flat");
        else if (h != want) ck.fail("broadcast", name + ": result is not the root's data");
      }
    }
  }
}

// Nonblocking allreduces run on the progress thread through the same path (and may be fused).
void nonblocking_cases(Checker& ck) {
  const int k = 24;
  std::vector<std::vector<unsigned char>> h, f;
  std::vector<gjRequest_t> reqs(k);
  for (int t = 0; t < k; ++t) {
    h.push_back(fill(gjSum, gjFloat32, ck.rank, 1000 + 517 * static_cast<std::size_t>(t)));
    f.push_back(h.back());
  }
  ++ck.cases;
  for (int t = 0; t < k; ++t) {
    ck.ok("nonblocking", "gjIallReduce", gjIallReduce(h[t].data(), h[t].data(), 1000 + 517 * static_cast<std::size_t>(t),
                                                      gjFloat32, gjSum, 1.0, 1.0, ck.hier, nullptr, &reqs[t]), ck.hier);
  }
  for (int t = 0; t < k; ++t) ck.ok("nonblocking", "gjWait", gjWait(reqs[t]), nullptr);
  for (int t = 0; t < k; ++t) {
    const std::size_t n = 1000 + 517 * static_cast<std::size_t>(t);
    if (!ck.ok("nonblocking", "flat", gjAllReduce(f[t].data(), f[t].data(), n, gjFloat32, gjSum, ck.flat, nullptr), ck.flat))
      return;
    compare(ck, "nonblocking", "iallreduce f32 sum #" + std::to_string(t), gjSum, gjFloat32, h[t].data(), f[t].data(), n, 0);
  }
}

}  // namespace

int main() {
  setenv("GJ_COLL_LOG_LEVEL", "info", 0);  // the scenario checks which host path each comm took
  Checker ck;
  if (gjCommInitWorld(&ck.hier) != gjSuccess) {
    std::printf("FAILED setup: gjCommInitWorld: %s\n", gjGetLastError(nullptr));
    return 1;
  }
  gjCommRank(ck.hier, &ck.rank);
  gjCommSize(ck.hier, &ck.size);
  setenv("GJ_COLL_HIERARCHICAL", "0", 1);  // read when a communicator is created
  MPI_Comm world = MPI_COMM_WORLD;
  if (gjCommInitMpi(&ck.flat, &world) != gjSuccess) {
    std::printf("FAILED setup: gjCommInitMpi: %s\n", gjGetLastError(nullptr));
    return 1;
  }
  const std::pair<const char*, void (*)(Checker&)> runs[] = {
      {"allreduce", allreduce_cases}, {"grouped", grouped_cases},     {"reduce-scatter", reduce_scatter_cases},
      {"allgather", allgather_cases}, {"broadcast", broadcast_cases}, {"nonblocking", nonblocking_cases}};
  for (const auto& [family, run] : runs) {
    const double start = MPI_Wtime();
    run(ck);
    if (ck.rank == 0) std::fprintf(stderr, "%s: %.1f s\n", family, MPI_Wtime() - start);
  }

  // Rank 0 gathers every rank's failed families and details, so its first line names them.
  std::string mine;
  for (const auto& [family, n] : ck.failed) mine += family + "(" + std::to_string(n) + ") ";
  mine += "\n";
  for (const auto& d : ck.details) mine += d + "\n";
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<std::size_t>(ck.size));
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> displs(lens.size(), 0);
  int all = 0;
  for (std::size_t r = 0; r < lens.size(); ++r) {
    displs[r] = all;
    all += lens[r];
  }
  std::vector<char> text(static_cast<std::size_t>(ck.rank == 0 ? all : 0) + 1);
  MPI_Gatherv(mine.data(), len, MPI_CHAR, text.data(), lens.data(), displs.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  int failures = 0;
  for (const auto& [family, n] : ck.failed) failures += n;
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  // Which host each rank ran on, for the scenario to check the placement it asked for.
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  int host_len = 0;
  MPI_Get_processor_name(host, &host_len);
  std::vector<char> hosts(static_cast<std::size_t>(ck.size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (ck.rank == 0) {
    if (failures == 0) {
      std::printf("PASSED hierarchical == flat: %d cases on %d ranks\n", ck.cases, ck.size);
    } else {
      std::string families, details;
      for (std::size_t r = 0; r < lens.size(); ++r) {
        const std::string part(text.data() + displs[r], static_cast<std::size_t>(lens[r]));
        const auto nl = part.find('\n');
        if (nl > 0) families += "rank " + std::to_string(r) + ": " + part.substr(0, nl) + " ";
        details += part.substr(nl + 1);
      }
      std::printf("FAILED %s(%d failures, %d cases on %d ranks)\n%s", families.c_str(), failures, ck.cases, ck.size,
                  details.c_str());
    }
    std::printf("HOSTS");
    for (int r = 0; r < ck.size; ++r) std::printf(" %s", hosts.data() + static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME);
    std::printf("\n");
    std::fflush(stdout);
  }
  const bool destroyed = gjCommDestroy(ck.flat) == gjSuccess && gjCommDestroy(ck.hier) == gjSuccess;
  gjFinalize();
  return failures == 0 && destroyed ? 0 : 1;
}
