// TCP round trip between two pods, the baseline the cpu-binding scenario compares an allreduce
// with: one byte there and back over one connection (TCP_NODELAY), n times; prints the median.
//   mh_tcp_rtt serve <port>               answer one connection, then exit
//   mh_tcp_rtt ping <ipv4> <port> <n>     prints "TCP_RTT n=<n> median_us=<t>"
// Exit codes: 0 ok, 2 usage, 1 a socket call failed (named on stderr).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int fail(const char* call) {
  perror(call);
  return 1;
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int compare_doubles(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static int serve(int port) {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  const int on = 1;
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
  if (s < 0) return fail("socket");
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (bind(s, (struct sockaddr*)&addr, sizeof addr) != 0) return fail("bind");
  if (listen(s, 1) != 0) return fail("listen");
  const int c = accept(s, NULL, NULL);
  if (c < 0) return fail("accept");
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  char b;
  while (read(c, &b, 1) == 1)
    if (write(c, &b, 1) != 1) return fail("write");
  return 0;
}

static int ping(const char* ip, int port, long n) {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  const int on = 1;
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
  if (s < 0) return fail("socket");
  if (inet_pton(AF_INET, ip, &addr.sin_addr) != 1) return fprintf(stderr, "mh_tcp_rtt: '%s' is not IPv4\n", ip), 2;
  for (int tries = 0; connect(s, (struct sockaddr*)&addr, sizeof addr) != 0; ++tries) {
    if (tries == 100) return fail("connect");
    usleep(20000);  // the server may not listen yet
  }
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  double* t = malloc((size_t)n * sizeof *t);
  char b = 'x';
  for (long i = -10; i < n; ++i) {  // 10 warm-up trips
    const double t0 = now_us();
    if (write(s, &b, 1) != 1) return fail("write");
    if (read(s, &b, 1) != 1) return fail("read");
    if (i >= 0) t[i] = now_us() - t0;
  }
  qsort(t, (size_t)n, sizeof *t, compare_doubles);
  printf("TCP_RTT n=%ld median_us=%.1f\n", n, t[n / 2]);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "serve") == 0) return serve(atoi(argv[2]));
  if (argc == 5 && strcmp(argv[1], "ping") == 0 && atol(argv[4]) > 0) return ping(argv[2], atoi(argv[3]), atol(argv[4]));
  fprintf(stderr, "usage: mh_tcp_rtt serve <port> | ping <ipv4> <port> <n>\n");
  return 2;
}
