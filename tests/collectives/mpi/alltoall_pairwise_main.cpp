// The pairwise alltoall-v exchange (what host buffers take beyond int byte counts), run with
// tiny pieces so blocks span many messages: every dtype size, uneven and empty blocks, against
// MPI_Alltoallv's result of the same exchange. Exit 0, or 30 on any rank's failure.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <numeric>
#include <vector>

#include "alltoall/host_alltoall.h"
#include "gj/collectives.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int failures = 0;
  for (gjDataType_t d : {gjUint8, gjFloat16, gjFloat32, gjFloat64}) {
    const std::size_t esz = gjDataTypeSize(d);
    for (std::size_t piece : {std::size_t{1}, std::size_t{7}, std::size_t{64}}) {
      std::vector<std::size_t> sc, rc;
      for (int q = 0; q < size; ++q) {
        sc.push_back(static_cast<std::size_t>((rank * 5 + q * 3) % 7) * 11);
        rc.push_back(static_cast<std::size_t>((q * 5 + rank * 3) % 7) * 11);
      }
      const std::size_t out = std::accumulate(sc.begin(), sc.end(), std::size_t{0});
      const std::size_t in = std::accumulate(rc.begin(), rc.end(), std::size_t{0});
      std::vector<unsigned char> send(out * esz), got(in * esz + 8, 0xee), want(in * esz + 8, 0xee);
      for (std::size_t b = 0; b < send.size(); ++b) send[b] = static_cast<unsigned char>(rank * 31 + b * 13);
      std::vector<int> sn, sd, rn, rd;
      int s_at = 0, r_at = 0;
      for (int q = 0; q < size; ++q) {
        sn.push_back(static_cast<int>(sc[q] * esz));
        sd.push_back(s_at);
        s_at += sn.back();
        rn.push_back(static_cast<int>(rc[q] * esz));
        rd.push_back(r_at);
        r_at += rn.back();
      }
      MPI_Alltoallv(send.data(), sn.data(), sd.data(), MPI_BYTE, want.data(), rn.data(), rd.data(), MPI_BYTE,
                    MPI_COMM_WORLD);
      try {
        gj::alltoall::pairwise_alltoallv(MPI_COMM_WORLD, send.data(), sc.data(), got.data(), rc.data(), d, piece);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "[rank %d] pairwise dtype=%d piece=%zu threw: %s\n", rank, d, piece, e.what());
        ++failures;
        continue;
      }
      if (std::memcmp(got.data(), want.data(), got.size()) != 0) {
        std::fprintf(stderr, "[rank %d] pairwise dtype=%d piece=%zu differs from MPI_Alltoallv\n", rank, d, piece);
        ++failures;
      }
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%s (ranks=%d)\n", failures ? "FAILED" : "PASSED", size);
  MPI_Finalize();
  return failures ? 30 : 0;
}
