/* Built by pkgconfig.sh with nothing but `pkg-config gj-collectives`: a C program that
 * allreduces rank+1 across ranks and checks the sum n(n+1)/2. Exit 0 on success. */
#include <gj/collectives.h>
#include <stdio.h>

int main(void) {
  gjComm_t comm = NULL;
  int rank = 0, size = 0;
  if (gjCommInitWorld(&comm) != gjSuccess || gjCommRank(comm, &rank) != gjSuccess ||
      gjCommSize(comm, &size) != gjSuccess) {
    fprintf(stderr, "pkgconfig_smoke: init failed: %s\n", gjGetLastError(comm));
    return 1;
  }
  int32_t v = rank + 1;
  gjResult_t r = gjAllReduce(&v, &v, 1, gjInt32, gjSum, comm, NULL);
  const int32_t want = size * (size + 1) / 2;
  int ok = r == gjSuccess && v == want;
  if (!ok) fprintf(stderr, "pkgconfig_smoke: rank %d: sum %d, want %d (%s)\n", rank, v, want, gjGetLastError(comm));
  if (ok && rank == 0) printf("pkgconfig_smoke: ok, sum over %d ranks = %d\n", size, v);
  gjCommDestroy(comm);
  gjFinalize();
  return ok ? 0 : 1;
}
