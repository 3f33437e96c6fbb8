/* The example job of the README: every rank reports itself and checks an allreduce.
   Optional argument: a variable name each rank reports ("NAME=value" or "NAME unset"). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char host[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  MPI_Get_processor_name(host, &len);
  int one = rank + 1, sum = 0;
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  const int want = size * (size + 1) / 2;
  printf("rank %d of %d on %s: allreduce %s (%d, want %d)\n", rank, size, host, sum == want ? "ok" : "WRONG", sum,
         want);
  if (argc > 1) {
    const char* v = getenv(argv[1]);
    printf("rank %d: %s%s%s\n", rank, argv[1], v != NULL ? "=" : " unset", v != NULL ? v : "");
  }
  MPI_Finalize();
  return sum == want ? 0 : 1;
}
