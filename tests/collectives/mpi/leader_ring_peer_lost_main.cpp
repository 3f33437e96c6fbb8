// The node leaders' ring (mpi/leader_ring.h) when a leader leaves the job: at 3 ranks rank 2
// never joins the ring; 200 ms into the others' ring_allreduce this process learns, as from its
// rank wrapper, that rank 2 is lost (peer::mark_lost); the ring's polled waits must throw
// gjPeerLost naming it within 2 s instead of waiting for ever. Then every rank, rank 2 included,
// meets at a barrier and finalizes. Exit 0 ok, 1 wrong.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "error.h"
#include "mpi/leader_ring.h"
#include "peer/liveness.h"
#include "peer/monitor.h"

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm ring = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &ring);
  MPI_Comm_set_errhandler(ring, MPI_ERRORS_RETURN);
  const auto live = gj::peer::Liveness::create(ring);
  int failures = 0;
  const int victim = size - 1;
  if (rank != victim) {
    std::thread wrapper([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      gj::peer::mark_lost(2, "pod-2", "exited with code 3");
    });
    std::vector<float> buf(std::size_t{1} << 20, 1.0f);  // 4 MiB: several chunks per segment
    std::vector<unsigned char> scratch;
    const auto start = std::chrono::steady_clock::now();
    gjResult_t code = gjSuccess;
    std::string what;
    try {
      const gj::peer::Watching watching(live.get());
      gj::ring_allreduce(buf.data(), buf.size(), gjFloat32, gjSum, ring, scratch);
    } catch (const gj::Error& e) {
      code = e.code();
      what = e.what();
    }
    wrapper.join();
    const long ms = static_cast<long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count());
    std::printf("rank %d: after %ld ms: %s\n", rank, ms, what.c_str());
    if (code != gjPeerLost || what.find("rank 2 (host pod-2) left the job: exited with code 3") == std::string::npos) {
      std::fprintf(stderr, "rank %d: FAIL: want gjPeerLost naming rank 2, got %d: %s\n", rank, code, what.c_str());
      ++failures;
    }
    if (ms > 2200) {
      std::fprintf(stderr, "rank %d: FAIL: took %ld ms, bound 2000 ms after the loss (at 200 ms)\n", rank, ms);
      ++failures;
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
