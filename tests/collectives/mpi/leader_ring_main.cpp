// gj::ring_allreduce (the node leaders' ring, collectives/src/mpi/leader_ring.h) under real
// mpiexec on MPI_COMM_WORLD: every reducible dtype x sum/min/max/prod x counts around the
// segment lines and the message chunks (empty segments, one element, several chunks per
// segment). Inputs are small integers, exact in every dtype, so the result must equal the
// independently computed fold, bitwise equal MPI_Allreduce where MPI has the type, and be the
// same bits on every rank; nothing past count may change.
// Exit codes: 0 ok, 2 wrong result, 5 unexpected exception.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "elements.h"
#include "dtype.h"
#include "mpi/leader_ring.h"

namespace {

int g_rank = 0, g_size = 1, g_failures = 0;

double value(gjRedOp_t op, int q, std::size_t i) {
  const auto k = static_cast<double>((i * 7 + static_cast<std::size_t>(q) * 3) % 5);
  return op == gjProd ? 1 + static_cast<double>(static_cast<int>(k) % 2) : k + 1;  // products stay exact in bf16
}

double expected(gjRedOp_t op, std::size_t i) {
  double acc = value(op, 0, i);
  for (int q = 1; q < g_size; ++q) {
    const double v = value(op, q, i);
    acc = op == gjSum ? acc + v : op == gjProd ? acc * v : op == gjMin ? std::min(acc, v) : std::max(acc, v);
  }
  return acc;
}

MPI_Datatype mpi_type(gjDataType_t d) {
  switch (d) {
    case gjFloat32: return MPI_FLOAT;
    case gjFloat64: return MPI_DOUBLE;
    case gjInt32: return MPI_INT32_T;
    case gjInt64: return MPI_INT64_T;
    case gjUint8: return MPI_UINT8_T;
    default: return MPI_DATATYPE_NULL;
  }
}

MPI_Op mpi_op(gjRedOp_t op) {
  return op == gjSum ? MPI_SUM : op == gjProd ? MPI_PROD : op == gjMin ? MPI_MIN : MPI_MAX;
}

void fail(const std::string& name, const std::string& what) {
  if (++g_failures <= 10) std::fprintf(stderr, "rank %d: %s: %s\n", g_rank, name.c_str(), what.c_str());
}

void run_case(gjDataType_t d, gjRedOp_t op, std::size_t count, std::vector<unsigned char>& scratch) {
  const std::size_t es = gj::dtype_size(d);
  const std::string name = std::string("ring ") + gjt::dname(d) + " " + gjt::oname(op) + " count=" + std::to_string(count);
  std::vector<unsigned char> buf(count * es + 64, 0xCD), want(count * es + 64, 0xCD);
  for (std::size_t i = 0; i < count; ++i) {
    gjt::encode(d, value(op, g_rank, i), buf.data() + i * es);
    gjt::encode(d, expected(op, i), want.data() + i * es);
  }
  const std::vector<unsigned char> input(buf);
  gj::ring_allreduce(count > 0 ? buf.data() : nullptr, count, d, op, MPI_COMM_WORLD, scratch);
  if (buf != want) {
    std::size_t i = 0;
    while (i < count && std::memcmp(buf.data() + i * es, want.data() + i * es, es) == 0) ++i;
    fail(name, i < count ? "element " + std::to_string(i) + " = " + std::to_string(gjt::decode(d, buf.data() + i * es)) +
                               ", expected " + std::to_string(expected(op, i))
                         : "wrote past count");
    return;
  }
  if (count == 0) return;  // the check above saw every byte unchanged
  if (mpi_type(d) != MPI_DATATYPE_NULL) {
    std::vector<unsigned char> theirs(count * es);
    MPI_Allreduce(input.data(), theirs.data(), static_cast<int>(count), mpi_type(d), mpi_op(op), MPI_COMM_WORLD);
    if (std::memcmp(theirs.data(), buf.data(), count * es) != 0) fail(name, "differs from MPI_Allreduce");
  }
  // The same bits everywhere: rank 0's result against every rank's.
  std::vector<unsigned char> first(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(count * es));
  MPI_Bcast(first.data(), static_cast<int>(first.size()), MPI_BYTE, 0, MPI_COMM_WORLD);
  if (std::memcmp(first.data(), buf.data(), count * es) != 0) fail(name, "differs from rank 0's result");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  int rc = 0;
  try {
    std::vector<unsigned char> scratch;  // reused across calls, as the hierarchy reuses it
    const auto p = static_cast<std::size_t>(g_size);
    for (gjDataType_t d : gjt::kDtypes) {
      const std::size_t es = gj::dtype_size(d), line = 64 / es, chunk = (std::size_t{512} << 10) / es;
      const std::size_t counts[] = {0,        1,           p - 1 + 1, line * (p - 1) + 1, line * p + 1,
                                    chunk - 1, chunk * p + 1, (5 * chunk / 2) * p + 3};
      for (gjRedOp_t op : {gjSum, gjMin, gjMax, gjProd}) {
        for (std::size_t n : counts) run_case(d, op, n, scratch);
      }
    }
    if (g_failures > 0) rc = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: unexpected exception: %s\n", g_rank, e.what());
    rc = 5;
  }
  int worst = rc;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf("leader ring allreduce test on %d ranks: %s\n", g_size, worst == 0 ? "ok" : "FAILED");
  MPI_Finalize();
  return worst;
}
