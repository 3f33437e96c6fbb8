// A rank that leaves the job while its peers are in a collective (docs/collectives.md
// "Failure"), under a test double of the rank wrapper (rank_monitor_double.h):
//   peer_lost_main SCENARIO DIR [monitor|nomonitor] [blocking|nonblocking] [COUNT]
// SCENARIO (the victim is the last rank; it leaves after the first allreduce):
//   normal    every rank: 3 allreduces, destroy, gjFinalize: nothing fails, the library sends
//             hello and leave only, `end status=ok` lets gjFinalize finalize MPI
//   exit3     the victim _exit(3)s
//   shutdown  the victim destroys its communicator and calls gjFinalize, then exits 0
//   sigkill   the victim raises SIGKILL (nomonitor: the survivors see its pid gone)
// Every survivor's allreduce must fail with gjPeerLost naming the victim's rank, host and
// reason within 2 s of its wrapper's `lost` (of the victim's death without a monitor); the
// next call fails the same way at once; the library tells its wrapper `fail kind=peer-lost`;
// gjFinalize, told `end status=failed`, returns without finalizing MPI. Exit 0 = pass.
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "gj/collectives.h"
#include "rank_monitor_double.h"

namespace {

using gj::test::read_file;

constexpr long kBoundMs = 2000;  // issue 39: a departed peer fails the collective within 2 s

int g_rank = 0;
int g_failures = 0;

void expect(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "rank %d: FAIL: %s\n", g_rank, what.c_str());
  ++g_failures;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A file the wrappers write, once it exists and holds `part`, or after 2 s: a wrapper records
// the library's lines as it reads them (possibly after this rank was told `end`), and the
// victim's death after this rank may have seen its pid gone.
std::string sent_lines(const std::string& path, const std::string& part) {
  std::string text;
  for (int i = 0; i < 200; ++i) {
    text = read_file(path);
    if (!text.empty() && contains(text, part)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return text;
}

gjResult_t allreduce(gjComm_t c, std::vector<double>& x, bool nonblocking) {
  if (!nonblocking) return gjAllReduce(x.data(), x.data(), x.size(), gjFloat64, gjSum, c, nullptr);
  gjRequest_t r = nullptr;
  const gjResult_t rc = gjIallReduce(x.data(), x.data(), x.size(), gjFloat64, gjSum, 1, 1, c, nullptr, &r);
  return rc == gjSuccess ? gjWait(r) : rc;
}

std::string hostname() {
  char h[256] = {};
  gethostname(h, sizeof h - 1);
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: peer_lost_main normal|exit3|shutdown|sigkill DIR [monitor|nomonitor] "
                         "[blocking|nonblocking] [COUNT]\n");
    return 2;
  }
  const std::string scenario = argv[1];
  const bool monitor = argc <= 3 || std::string(argv[3]) != "nomonitor";
  const bool nonblocking = argc > 4 && std::string(argv[4]) == "nonblocking";
  const std::size_t count = argc > 5 ? std::strtoul(argv[5], nullptr, 10) : 1;
  const int size = gj::test::env_size();
  const int victim = size - 1;
  const bool is_victim = gj::test::env_rank() == victim;
  gj::test::DoubleOptions o;
  o.monitor = monitor;
  if (is_victim && scenario == "exit3") o.expected_status = 3 << 8;
  if (is_victim && scenario == "sigkill") o.expected_status = SIGKILL;
  const std::string dir = gj::test::run_under_double(argv[2], o);  // from here: the rank

  gjComm_t c = nullptr;
  if (gjCommInitWorld(&c) != gjSuccess) {
    std::fprintf(stderr, "init: %s\n", gjGetLastError(nullptr));
    return 1;
  }
  gjCommRank(c, &g_rank);
  std::vector<double> x(count, 1.0);
  expect(allreduce(c, x, nonblocking) == gjSuccess, std::string("first allreduce: ") + gjGetLastError(c));
  expect(x[0] == size, "first allreduce's sum");
  const std::string me = std::to_string(g_rank);

  if (scenario == "normal") {
    for (int i = 0; i < 2; ++i) expect(allreduce(c, x, nonblocking) == gjSuccess, gjGetLastError(c));
    expect(gjCommDestroy(c) == gjSuccess, gjGetLastError(nullptr));
    expect(gjFinalize() == gjSuccess, gjGetLastError(nullptr));
    int finalized = 0;
    MPI_Finalized(&finalized);
    expect(finalized == 1, "gjFinalize finalized MPI after `end status=ok`");
    if (monitor) {
      const std::string recv = sent_lines(dir + "/recv." + me, "leave\n");
      expect(contains(recv, "hello rank=" + me + " size=" + std::to_string(size) + "\n"), "hello sent: " + recv);
      expect(contains(recv, "leave\n"), "leave sent: " + recv);
      expect(!contains(recv, "fail"), "no fail line in a normal end: " + recv);
    }
    return g_failures == 0 ? 0 : 1;
  }

  if (is_victim) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the survivors are in their allreduce
    if (scenario == "exit3") std::_Exit(3);
    if (scenario == "sigkill") raise(SIGKILL);
    gjCommDestroy(c);
    gjFinalize();
    return 0;
  }

  gjResult_t rc = gjSuccess;
  for (int i = 0; i < 100000 && rc == gjSuccess; ++i) rc = allreduce(c, x, nonblocking);
  const long failed_at = gj::test::monotonic_ms();
  const std::string message = gjGetLastError(c);
  std::printf("rank %d: %s\n", g_rank, message.c_str());
  expect(rc == gjPeerLost, "result " + std::to_string(rc) + " (" + gjGetErrorString(rc) + "), want gjPeerLost: " + message);
  const std::string v = std::to_string(victim);
  const std::string why = scenario == "exit3"      ? "exited with code 3"
                          : scenario == "shutdown" ? "called shutdown"
                          : monitor                ? "killed by SIGKILL"
                                                   : "its process (pid ";
  const std::string host = monitor ? "pod-" + v : hostname();
  expect(contains(message, "rank " + v + " (host " + host + ") left the job: " + why), "message: " + message);
  // From the wrapper's `lost` (or, without one, from the victim's death) to the failure.
  const std::string since = monitor ? sent_lines(dir + "/sent_at." + me + "." + v, "")
                                     : sent_lines(dir + "/gone_at." + v, "");
  expect(!since.empty(), "the wrapper recorded when the victim left");
  if (!since.empty()) {
    const long took = failed_at - std::atol(since.c_str());
    std::printf("rank %d: failed %ld ms after the victim left\n", g_rank, took);
    expect(took <= kBoundMs, "failed " + std::to_string(took) + " ms after the victim left, bound 2000 ms");
  }
  // The communicator refuses further work, at once.
  const long again_at = gj::test::monotonic_ms();
  expect(allreduce(c, x, nonblocking) == gjPeerLost, std::string("the next call: ") + gjGetLastError(c));
  expect(gj::test::monotonic_ms() - again_at < 500, "the next call failed at once");
  expect(gjCommAbort(c) == gjSuccess, gjGetLastError(nullptr));
  expect(gjFinalize() == gjSuccess, gjGetLastError(nullptr));
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (monitor) {
    const std::string recv = sent_lines(dir + "/recv." + me, "leave\n");
    expect(contains(recv, "fail kind=peer-lost reason=rank " + v + " (host pod-" + v + ") left the job: " + why),
           "fail line sent: " + recv);
    expect(contains(recv, "leave\n"), "leave sent: " + recv);
    // Failing ends leave MPI unfinalized (its fence would wait for the victim); a victim that
    // called shutdown leaves with the others, and every rank's leave is a normal end.
    expect(finalized == (scenario == "shutdown" ? 1 : 0), "MPI_Finalized=" + std::to_string(finalized));
  }
  std::fflush(stdout);
  return g_failures == 0 ? 0 : 1;
}
