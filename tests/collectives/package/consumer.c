/* An installed-package consumer in C: allreduce of rank+1, checked. */
#include <gj/collectives.h>
#include <stdio.h>

int main(void) {
  gjComm_t comm = NULL;
  int rank = 0, size = 0;
  if (gjCommInitWorld(&comm) != gjSuccess) {
    fprintf(stderr, "gjCommInitWorld: %s\n", gjGetLastError(NULL));
    return 1;
  }
  gjCommRank(comm, &rank);
  gjCommSize(comm, &size);
  float grad[3] = {(float)(rank + 1), (float)(rank + 1), (float)(rank + 1)};
  gjResult_t rc = gjAllReduce(grad, grad, 3, gjFloat32, gjSum, comm, NULL);
  if (rc != gjSuccess) {
    fprintf(stderr, "gjAllReduce: %s: %s\n", gjGetErrorString(rc), gjGetLastError(comm));
    return 2;
  }
  const float want = (float)(size * (size + 1) / 2);
  int ok = grad[0] == want && grad[2] == want;
  gjCommDestroy(comm);
  gjFinalize();
  if (!ok) {
    fprintf(stderr, "rank %d: got %g, expected %g\n", rank, grad[0], want);
    return 3;
  }
  return 0;
}
