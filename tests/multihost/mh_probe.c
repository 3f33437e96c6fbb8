// Training program for the multi-host tests: each rank prints where it runs and what it sees,
// then all ranks check an allreduce whose result is known exactly (sum of rank+1 = n(n+1)/2).
// Lines are prefixed so the tests can grep them out of mixed pod logs:
//   RANK <r>/<n> host=<hostname> [NAME=value ...]      one per rank
//   ALLREDUCE ok sum=<s> expected=<e>                  rank 0, after the check passed
//   LOOP <r> iter=<i>                                  with --loop, one per rank per iteration
//   FAIL <r> exit=<code>                               with --fail, the failing rank, before it exits
//   ALLREDUCE_TIME n=<n> median_us=<t>                 with --time N, rank 0: N timed 4-byte allreduces
// Usage: mh_probe [--env NAME]... [--affinity] [--time N] [--loop SECONDS] [--exit CODE] [--fail RANK CODE]
//                 [--abort RANK CODE]
// --affinity adds cpus=<how many CPUs the rank may run on> to its RANK line (a rank pinned to a core: 1).
// --abort R C: rank R prints a line on stderr and calls MPI_Abort(MPI_COMM_WORLD, C) after the
// first allreduce.
// --loop keeps doing allreduces (1 per 200 ms) so a lost rank or host stalls or fails the job,
// which is what the kill tests need. --fail R C: rank R exits with C after the first allreduce,
// without MPI_Finalize (a training script that dies), while the others go on; C < 0: rank R
// kills itself with signal -C instead.
// Exit codes: 0 ok, 2 usage, 3 wrong allreduce result.
// On an MPICH whose MPI_Finalize can deadlock (see finalize_guard) the probe breaks the deadlock.
#define _GNU_SOURCE
#include <dirent.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

enum { kMaxEnv = 32 };

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

// MPICH before 4.2 with the ch4:ucx device (Debian 12 ships 4.0.2) can deadlock in MPI_Finalize
// over TCP: its netmod closes every endpoint in flush mode, a UCX TCP flush waits for the peer's
// acknowledgement, and a peer that finished its own flushes already waits in a PMI barrier
// without progressing UCX (MPICH 4.2 put that barrier before the flushes). This program tests the
// launcher, not MPICH: if MPI_Finalize has not returned after 2 s, a guard thread shuts down the
// TCP sockets MPI opened (not those the rank inherited: PMI's, the process manager's); UCX then
// fails the pending flushes, the close completes and MPI_Finalize returns (docs/multihost.md).
// Listening sockets stay: UCX asserts on a listener that fails.
enum { kMaxFd = 4096 };
static unsigned char inherited_fd[kMaxFd];

static void for_each_fd(void (*fn)(int fd)) {
  DIR* fds = opendir("/proc/self/fd");
  if (!fds) return;
  for (struct dirent* e; (e = readdir(fds)) != NULL;) {
    const int fd = atoi(e->d_name);
    if (fd > 2 && fd < kMaxFd && fd != dirfd(fds)) fn(fd);
  }
  closedir(fds);
}

static void mark_inherited(int fd) { inherited_fd[fd] = 1; }

static int sockets_shut = 0;
static void shut_mpi_socket(int fd) {
  struct sockaddr_storage addr;
  socklen_t len = sizeof addr;
  if (inherited_fd[fd] || getsockname(fd, (struct sockaddr*)&addr, &len) != 0) return;
  if (addr.ss_family != AF_INET && addr.ss_family != AF_INET6) return;
  int listening = 0;
  socklen_t opt_len = sizeof listening;
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &opt_len) != 0 || listening) return;
  if (shutdown(fd, SHUT_RDWR) == 0) ++sockets_shut;
}

static int finalize_can_deadlock(void) {
#if defined(MPICH_NUMVERSION) && MPICH_NUMVERSION < 40200000
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  return strstr(version, "ch4:ucx") != NULL;
#else
  return 0;
#endif
}

static void* finalize_guard(void* arg) {
  (void)arg;
  sleep_ms(2000);
  for_each_fd(shut_mpi_socket);
  fprintf(stderr, "mh_probe: MPI_Finalize still running after 2 s (MPICH < 4.2 ch4:ucx deadlock): shut down %d sockets\n",
          sockets_shut);
  return NULL;
}

// " cpus=<n>": how many CPUs this process may run on (nproc's count).
static int append_affinity(char* out, size_t room) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return snprintf(out, room, " cpus=?");
  return snprintf(out, room, " cpus=%d", CPU_COUNT(&set));
}

static int compare_doubles(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

// n allreduces of one int, each timed on its own; the median over rank 0's calls, in us.
static double median_allreduce_us(long n, int rank) {
  double* t = malloc((size_t)n * sizeof *t);
  int one = rank + 1, sum = 0;
  for (int warm = 0; warm < 10; ++warm) MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  for (long i = 0; i < n; ++i) {
    const double t0 = MPI_Wtime();
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    t[i] = (MPI_Wtime() - t0) * 1e6;
  }
  qsort(t, (size_t)n, sizeof *t, compare_doubles);
  const double median = t[n / 2];
  free(t);
  return median;
}

int main(int argc, char** argv) {
  const char* env_names[kMaxEnv];
  int n_env = 0;
  double loop_seconds = 0;
  int exit_code = 0;
  int fail_rank = -1, fail_code = 0, fail_abort = 0;
  int show_affinity = 0;
  long timed = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--env") == 0 && i + 1 < argc && n_env < kMaxEnv) {
      env_names[n_env++] = argv[++i];
    } else if (strcmp(argv[i], "--affinity") == 0) {
      show_affinity = 1;
    } else if (strcmp(argv[i], "--time") == 0 && i + 1 < argc && atol(argv[i + 1]) > 0) {
      timed = atol(argv[++i]);
    } else if (strcmp(argv[i], "--loop") == 0 && i + 1 < argc) {
      loop_seconds = atof(argv[++i]);
    } else if (strcmp(argv[i], "--exit") == 0 && i + 1 < argc) {
      exit_code = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--fail") == 0 && i + 2 < argc) {
      fail_rank = atoi(argv[++i]);
      fail_code = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--abort") == 0 && i + 2 < argc) {
      fail_rank = atoi(argv[++i]);
      fail_code = atoi(argv[++i]);
      fail_abort = 1;
    } else {
      fprintf(stderr, "mh_probe: unknown argument '%s'; usage: mh_probe [--env NAME]... [--affinity] [--time N] [--loop S] [--exit CODE] [--fail RANK CODE] [--abort RANK CODE]\n",
              argv[i]);
      return 2;
    }
  }

  for_each_fd(mark_inherited);
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
  if (show_affinity) len += append_affinity(line + len, sizeof line - (size_t)len);
  printf("%s\n", line);
  fflush(stdout);

  long mine = rank + 1, sum = 0;
  const long expected = (long)size * (size + 1) / 2;
  MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (sum != expected) {
    fprintf(stderr, "ALLREDUCE wrong on rank %d: sum=%ld expected=%ld\n", rank, sum, expected);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  if (rank == fail_rank && fail_abort) {
    printf("FAIL %d exit=abort\n", rank);
    fflush(stdout);
    fprintf(stderr, "mh_probe: rank %d calls MPI_Abort with errorcode %d\n", rank, fail_code);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, fail_code);
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

  if (timed > 0) {
    const double median = median_allreduce_us(timed, rank);
    if (rank == 0) {
      printf("ALLREDUCE_TIME n=%ld median_us=%.1f\n", timed, median);
      fflush(stdout);
    }
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

  pthread_t guard;
  if (finalize_can_deadlock()) pthread_create(&guard, NULL, finalize_guard, NULL);
  MPI_Finalize();
  return exit_code;
}
