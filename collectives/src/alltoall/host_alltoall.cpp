#include "alltoall/host_alltoall.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "alltoall/alltoall_plan.h"
#include "dtype.h"
#include "error.h"
#include "mpi_base/mpi_check.h"
#include "mpi_base/mpi_wait.h"

namespace gj::alltoall {
namespace {

constexpr std::size_t kPiece = std::size_t{1} << 30;  // bytes per message beyond int counts

std::string describe(const char* what, gjDataType_t dtype) {
  return std::string(what) + "(alltoall, dtype=" + dtype_name(dtype) + ")";
}

std::vector<int> to_int(const std::vector<std::size_t>& v, std::size_t elem) {
  std::vector<int> out;
  out.reserve(v.size());
  for (std::size_t x : v) out.push_back(static_cast<int>(x * elem));
  return out;
}

}  // namespace

void host_alltoallv(MPI_Comm comm, const void* send, const std::size_t* sendcounts, void* recv,
                    const std::size_t* recvcounts, gjDataType_t dtype) {
  int rank = 0, size = 1;
  mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  const std::size_t elem = dtype_size(dtype);
  const std::vector<std::size_t> sdispl = offsets(sendcounts, size), rdispl = offsets(recvcounts, size);
  if (fits_int(sendcounts, size, elem) && fits_int(recvcounts, size, elem)) {
    const std::vector<std::size_t> sc(sendcounts, sendcounts + size), rc(recvcounts, recvcounts + size);
    const std::vector<int> sn = to_int(sc, elem), sd = to_int(sdispl, elem), rn = to_int(rc, elem),
                           rd = to_int(rdispl, elem);
    run_polled(
        [&](MPI_Request* r) {
          return MPI_Ialltoallv(send, sn.data(), sd.data(), MPI_BYTE, recv, rn.data(), rd.data(), MPI_BYTE, comm, r);
        },
        [&] { return describe("MPI_Ialltoallv", dtype); });
    return;
  }
  pairwise_alltoallv(comm, send, sendcounts, recv, recvcounts, dtype, kPiece);
}

void pairwise_alltoallv(MPI_Comm comm, const void* sendbuff, const std::size_t* sendcounts, void* recvbuff,
                        const std::size_t* recvcounts, gjDataType_t dtype, std::size_t piece) {
  int rank = 0, size = 1;
  mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  const std::size_t elem = dtype_size(dtype);
  const std::vector<std::size_t> sdispl = offsets(sendcounts, size), rdispl = offsets(recvcounts, size);
  const auto* send = static_cast<const char*>(sendbuff);
  auto* recv = static_cast<char*>(recvbuff);
  const std::size_t self = static_cast<std::size_t>(rank);
  if (sendcounts[rank] > 0) std::memcpy(recv + rdispl[self] * elem, send + sdispl[self] * elem, sendcounts[rank] * elem);
  for (const Step& s : pairwise_steps(rank, size)) {
    // A block is cut into pieces of `piece` bytes; sender and receiver agree on its size (the
    // counts check), so both post the same number of messages, none for an empty block.
    const std::size_t out_bytes = sendcounts[s.send_peer] * elem;
    const std::size_t in_bytes = recvcounts[s.recv_peer] * elem;
    const char* from = send + sdispl[static_cast<std::size_t>(s.send_peer)] * elem;
    char* to = recv + rdispl[static_cast<std::size_t>(s.recv_peer)] * elem;
    std::vector<MPI_Request> reqs;
    for (std::size_t at = 0; at < in_bytes; at += piece) {
      reqs.emplace_back();
      mpi_check(MPI_Irecv(to + at, static_cast<int>(std::min(piece, in_bytes - at)), MPI_BYTE, s.recv_peer, 0, comm,
                          &reqs.back()),
                describe("MPI_Irecv", dtype));
    }
    for (std::size_t at = 0; at < out_bytes; at += piece) {
      reqs.emplace_back();
      mpi_check(MPI_Isend(from + at, static_cast<int>(std::min(piece, out_bytes - at)), MPI_BYTE, s.send_peer, 0,
                          comm, &reqs.back()),
                describe("MPI_Isend", dtype));
    }
    mpi_check(wait_all_polled(static_cast<int>(reqs.size()), reqs.data()), describe("MPI_Testall", dtype));
  }
}

void require_matching_counts(MPI_Comm comm, const char* call, const std::size_t* sendcounts,
                             const std::size_t* recvcounts) {
  int rank = 0, size = 1;
  mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  static_assert(sizeof(std::size_t) == sizeof(std::uint64_t), "64-bit size_t");
  std::vector<std::size_t> theirs(static_cast<std::size_t>(size));
  run_polled(
      [&](MPI_Request* r) {
        return MPI_Ialltoall(sendcounts, 1, MPI_UINT64_T, theirs.data(), 1, MPI_UINT64_T, comm, r);
      },
      [&] { return std::string(call) + ": MPI_Ialltoall(count check)"; });
  const int bad = first_mismatch(recvcounts, theirs.data(), size);
  // The lowest rank that found a mismatch reports it: its first sender and both counts.
  const std::uint64_t mine = bad >= 0 ? static_cast<std::uint64_t>(rank) : UINT64_MAX;
  std::uint64_t lowest = UINT64_MAX;
  run_polled([&](MPI_Request* r) { return MPI_Iallreduce(&mine, &lowest, 1, MPI_UINT64_T, MPI_MIN, comm, r); },
             [&] { return std::string(call) + ": MPI_Iallreduce(count check)"; });
  if (lowest == UINT64_MAX) return;
  const int reporter = static_cast<int>(lowest);
  std::uint64_t verdict[3] = {0, 0, 0};
  if (rank == reporter) {
    verdict[0] = static_cast<std::uint64_t>(bad);
    verdict[1] = theirs[static_cast<std::size_t>(bad)];
    verdict[2] = recvcounts[bad];
  }
  mpi_check(MPI_Bcast(verdict, 3, MPI_UINT64_T, reporter, comm), std::string(call) + ": MPI_Bcast(count check)");
  throw Error(gjInvalidUsage, std::string(call) + ": rank " + std::to_string(verdict[0]) + " sends " +
                                  std::to_string(verdict[1]) + " elements to rank " + std::to_string(reporter) +
                                  " (its sendcounts[" + std::to_string(reporter) + "]) but rank " +
                                  std::to_string(reporter) + " expects " + std::to_string(verdict[2]) +
                                  " (its recvcounts[" + std::to_string(verdict[0]) +
                                  "]); every rank's recvcounts[q] must equal rank q's sendcounts for it");
}

}  // namespace gj::alltoall
