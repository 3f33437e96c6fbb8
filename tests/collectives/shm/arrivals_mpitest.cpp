// Arrival counters (shm/arrivals.h) under real mpiexec: arrivals are numbered alike on every
// rank, and a rank waiting for a late peer sleeps (little CPU) until the peer's arrival wakes
// it, and gives up with gjTimeout after the board's timeout when the peer never comes.
// Exit 0 and "PASSED" on rank 0, else 1.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <thread>

#include "error.h"
#include "shm/arrivals.h"

namespace {

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string why_not;
  auto arrivals = gj::shm::Arrivals::create(MPI_COMM_WORLD, 10000, &why_not);
  int failed = 0;
  if (!arrivals) {
    std::printf("rank %d: no arrival board: %s\n", rank, why_not.c_str());
    failed = 1;
  }
  const int late = size - 1;
  for (std::uint64_t round = 1; arrivals && round <= 3; ++round) {
    if (rank == late) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const double cpu0 = thread_cpu_seconds();
    const auto wall0 = std::chrono::steady_clock::now();
    const std::uint64_t n = arrivals->arrive();
    arrivals->wait_for_peers(n);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    const double cpu = thread_cpu_seconds() - cpu0;
    if (n != round) {
      std::printf("rank %d: arrival %llu numbered %llu\n", rank, static_cast<unsigned long long>(round),
                  static_cast<unsigned long long>(n));
      failed = 1;
    }
    // The early ranks waited for the late one (>= most of its 300 ms) asleep: a spinning or
    // yielding waiter would use about the whole wait in CPU.
    if (rank != late && (wall < 0.25 || cpu > 0.06)) {
      std::printf("rank %d round %llu: waited %.3f s wall, %.3f s CPU (want >= 0.25 wall, <= 0.06 CPU)\n", rank,
                  static_cast<unsigned long long>(round), wall, cpu);
      failed = 1;
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  // A peer that never arrives: rank 0 waits on a board with a 200 ms timeout while the others
  // sit in the barrier, and must get gjTimeout after about that long, not wait forever.
  auto short_fuse = gj::shm::Arrivals::create(MPI_COMM_WORLD, 200, &why_not);
  if (rank == 0 && short_fuse) {
    const auto wall0 = std::chrono::steady_clock::now();
    gjResult_t code = gjSuccess;
    try {
      short_fuse->wait_for_peers(short_fuse->arrive());
    } catch (const gj::Error& e) {
      code = e.code();
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    if (code != gjTimeout || wall < 0.19 || wall > 5.0) {
      std::printf("rank 0: a peer that never arrives gave result %d after %.3f s (want gjTimeout after ~0.2 s)\n",
                  static_cast<int>(code), wall);
      failed = 1;
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  short_fuse.reset();
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%s (ranks=%d)\n", failed ? "FAILED" : "PASSED", size);
  arrivals.reset();
  MPI_Finalize();
  return failed;
}
