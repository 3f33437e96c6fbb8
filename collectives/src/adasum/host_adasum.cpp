#include "adasum/host_adasum.h"

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "adasum/adasum_plan.h"
#include "dtype.h"
#include "host/reduce.h"
#include "mpi_base/mpi_check.h"
#include "mpi_base/mpi_wait.h"

namespace gj::adasum {
namespace {

constexpr int kTag = 0x6164;  // "ad": Adasum's messages, apart from any other on the communicator
constexpr std::size_t kPiece = std::size_t{1} << 28;  // elements per message (fits an int for f64)

template <class T>
MPI_Datatype mpi_type() {
  return sizeof(T) == 8 ? MPI_DOUBLE : MPI_FLOAT;
}

// Swaps [send, send + n_out) for [recv, recv + n_in) with peer, in pieces.
template <class T>
void swap_with(MPI_Comm comm, int peer, const T* send, std::size_t n_out, T* recv, std::size_t n_in) {
  std::vector<MPI_Request> reqs;
  for (std::size_t at = 0; at < n_in; at += kPiece) {
    reqs.emplace_back();
    mpi_check(MPI_Irecv(recv + at, static_cast<int>(std::min(kPiece, n_in - at)), mpi_type<T>(), peer, kTag, comm,
                        &reqs.back()),
              "MPI_Irecv(adasum)");
  }
  for (std::size_t at = 0; at < n_out; at += kPiece) {
    reqs.emplace_back();
    mpi_check(MPI_Isend(send + at, static_cast<int>(std::min(kPiece, n_out - at)), mpi_type<T>(), peer, kTag, comm,
                        &reqs.back()),
              "MPI_Isend(adasum)");
  }
  mpi_check(wait_all_polled(static_cast<int>(reqs.size()), reqs.data()), "MPI_Testall(adasum)");
}

// Sums v over the aligned group of `group` ranks around rank (an XOR butterfly).
void group_sum(MPI_Comm comm, int rank, int group, double* v, int n) {
  std::vector<double> other(static_cast<std::size_t>(n));
  for (int d = 1; d < group; d <<= 1) {
    mpi_check(MPI_Sendrecv(v, n, MPI_DOUBLE, rank ^ d, kTag + 1, other.data(), n, MPI_DOUBLE, rank ^ d, kTag + 1,
                           comm, MPI_STATUS_IGNORE),
              "MPI_Sendrecv(adasum dot products)");
    for (int i = 0; i < n; ++i) v[i] += other[static_cast<std::size_t>(i)];
  }
}

template <class T>
void run(MPI_Comm comm, int rank, int size, T* data, std::size_t count) {
  const std::vector<Level> levels = schedule(rank, size, count);
  std::vector<T> recv(count);
  for (const Level& l : levels) {
    swap_with(comm, l.peer, data + l.send_offset, l.send_length, recv.data() + l.keep_offset, l.keep_length);
    const T* mine = data + l.keep_offset;
    const T* theirs = recv.data() + l.keep_offset;
    double dot = 0, own = 0, other = 0;
    for (std::size_t i = 0; i < l.keep_length; ++i) {
      const double a = mine[i], b = theirs[i];
      dot += a * b;
      own += a * a;
      other += b * b;
    }
    // Oriented (left, right) so that the whole group sums the same vector's pieces together.
    double v[3] = {dot, l.left ? own : other, l.left ? other : own};
    group_sum(comm, rank, 2 * l.distance, v, 3);
    const Coefficients c = coefficients(v[0], v[1], v[2]);
    const double c_mine = l.left ? c.a : c.b, c_theirs = l.left ? c.b : c.a;
    T* out = data + l.keep_offset;
    // Each element is combined on one rank only (the pair keeps disjoint halves) and the
    // coefficients are the same on both: every rank ends with the same bits.
    for (std::size_t i = 0; i < l.keep_length; ++i) {
      const double left = l.left ? c_mine * out[i] : c_theirs * theirs[i];
      const double right = l.left ? c_theirs * theirs[i] : c_mine * out[i];
      out[i] = static_cast<T>(left + right);
    }
  }
  for (auto l = levels.rbegin(); l != levels.rend(); ++l) {
    swap_with(comm, l->peer, data + l->keep_offset, l->keep_length, data + l->send_offset, l->send_length);
  }
}

}  // namespace

void host_adasum(MPI_Comm comm, const void* send, void* recv, std::size_t count, gjDataType_t dtype) {
  int rank = 0, size = 1;
  mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  const std::size_t bytes = count * dtype_size(dtype);
  if (send != recv) host::copy(recv, send, bytes);
  if (size == 1 || count == 0) return;
  switch (dtype) {
    case gjFloat32: return run(comm, rank, size, static_cast<float*>(recv), count);
    case gjFloat64: return run(comm, rank, size, static_cast<double*>(recv), count);
    case gjFloat16:
    case gjBfloat16: {
      std::vector<float> wide(count);
      host::to_f32(wide.data(), recv, count, dtype);
      run(comm, rank, size, wide.data(), count);
      host::from_f32(recv, wide.data(), count, dtype);
      return;
    }
    default: break;
  }
  throw Error(gjUnsupported, std::string("adasum: dtype=") + dtype_name(dtype) + " is not f32, f64, f16 or bf16");
}

}  // namespace gj::adasum
