// Training program for the multi-host tests: each rank prints where it runs and what it sees,
// then all ranks check an allreduce whose result is known exactly (sum of rank+1 = n(n+1)/2).
// Lines are prefixed so the tests can grep them out of mixed pod logs:
//   RANK <r>/<n> host=<hostname> [NAME=value ...]      one per rank
//   ALLREDUCE ok sum=<s> expected=<e>                  rank 0, after the check passed
//   LOOP <r> iter=<i>                                  with --loop, one per rank per iteration
//   FAIL <r> exit=<code>                               with --fail, the failing rank, before it exits
// Usage: mh_probe [--env NAME]... [--loop SECONDS] [--exit CODE] [--fail RANK CODE]
// --loop keeps doing allreduces (1 per 200 ms) so a lost rank or host stalls or fails the job,
// which is what the kill tests need. --fail R C: rank R exits with C after the first allreduce,
// without MPI_Finalize (a training script that dies), while the others go on; C < 0: rank R
// kills itself with signal -C instead.
// Exit codes: 0 ok, 2 usage, 3 wrong allreduce result.
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { kMaxEnv = 32 };

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

int main(int argc, char** argv) {
  const char* env_names[kMaxEnv];
  int n_env = 0;
  double loop_seconds = 0;
  int exit_code = 0;
  int fail_rank = -1, fail_code = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--env") == 0 && i + 1 < argc && n_env < kMaxEnv) {
      env_names[n_env++] = argv[++i];
    } else if (strcmp(argv[i], "--loop") == 0 && i + 1 < argc) {
      loop_seconds = atof(argv[++i]);
    } else if (strcmp(argv[i], "--exit") == 0 && i + 1 < argc) {
      exit_code = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--fail") == 0 && i + 2 < argc) {
      fail_rank = atoi(argv[++i]);
      fail_code = atoi(argv[++i]);
    } else {
      fprintf(stderr, "mh_probe: unknown argument '%s'; usage: mh_probe [--env NAME]... [--loop S] [--exit CODE] [--fail RANK CODE]\n",
              argv[i]);
      return 2;
    }
  }

  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char host[256] = {0};
  gethostname(host, sizeof host - 1);

  // One write per rank keeps each RANK line whole in the forwarded output.
  char line[8192];
  int len = snprintf(line, sizeof line, "RANK %d/%d host=%s", rank, size, host);
  for (int e = 0; e < n_env && len < (int)sizeof line; ++e) {
    const char* v = getenv(env_names[e]);
    len += snprintf(line + len, sizeof line - (size_t)len, " %s=%s", env_names[e], v ? v : "<unset>");
  }
  printf("%s\n", line);
  fflush(stdout);

  long mine = rank + 1, sum = 0;
  const long expected = (long)size * (size + 1) / 2;
  MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (sum != expected) {
    fprintf(stderr, "ALLREDUCE wrong on rank %d: sum=%ld expected=%ld\n", rank, sum, expected);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  if (rank == fail_rank) {
    printf("FAIL %d exit=%d\n", rank, fail_code);
    fflush(stdout);
    if (fail_code < 0) kill(getpid(), -fail_code);  // dies of that signal (SIGKILL: the OOM killer)
    exit(fail_code);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    printf("ALLREDUCE ok sum=%ld expected=%ld\n", sum, expected);
    fflush(stdout);
  }

  const long iterations = (long)(loop_seconds * 5);
  for (long it = 0; it < iterations; ++it) {
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (it == 0 || sum != expected) {
      printf("LOOP %d iter=%ld sum=%ld\n", rank, it, sum);
      fflush(stdout);
    }
    sleep_ms(200);
  }

  MPI_Finalize();
  return exit_code;
}
