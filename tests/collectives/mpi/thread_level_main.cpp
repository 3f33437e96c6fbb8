// A caller's MPI initialized below MPI_THREAD_MULTIPLE: blocking calls work, nonblocking host
// calls fail with gjInvalidUsage naming the level the process has. Exit 0 on success, 77 (a
// skip) where MPI gives MPI_THREAD_MULTIPLE even when asked for less.
#include <mpi.h>

#include <cstdio>
#include <string>

#include "gj/collectives.h"

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int failures = 0;
  const auto fail = [&](const std::string& what) {
    std::fprintf(stderr, "FAIL %s\n", what.c_str());
    ++failures;
  };
  if (provided >= MPI_THREAD_MULTIPLE) {  // every rank alike: nothing to test, a skip (77)
    std::printf("SKIP: MPI gave MPI_THREAD_MULTIPLE when asked for less\n");
    MPI_Finalize();
    return 77;
  }
  {
    const MPI_Comm world = MPI_COMM_WORLD;
    gjComm_t c = nullptr;
    if (gjCommInitMpi(&c, &world) != gjSuccess) fail(std::string("init: ") + gjGetLastError(nullptr));
    float x = 1;
    if (gjAllReduce(&x, &x, 1, gjFloat32, gjSum, c, nullptr) != gjSuccess) fail("blocking allreduce");
    gjRequest_t r = nullptr;
    const gjResult_t rc = gjIallReduce(&x, &x, 1, gjFloat32, gjSum, 1, 1, c, nullptr, &r);
    const std::string msg = gjGetLastError(c);
    if (rc != gjInvalidUsage) fail("gjIallReduce below MPI_THREAD_MULTIPLE returned " + std::to_string(rc));
    if (msg.find("MPI_THREAD_MULTIPLE") == std::string::npos || msg.find("MPI_THREAD_FUNNELED") == std::string::npos) {
      fail("message does not name the levels: " + msg);
    }
    if (r != nullptr) fail("a refused call returned a request");
    if (gjBarrier(c) != gjSuccess) fail("blocking barrier");
    if (gjCommDestroy(c) != gjSuccess) fail("destroy");
  }
  int worst = failures;
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst == 0 ? 0 : 1;
}
