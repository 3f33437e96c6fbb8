// The job monitor's sockets (sys/job_monitor.h): wrappers connecting from their pods' addresses
// (127.0.0.x here), and the check of which pods are still up after a failure.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include "job_monitor.h"
#include "loopback.h"
#include "monitor_line.h"

using namespace std::chrono_literals;

namespace {

// A rank wrapper's connection to the monitor, made from `from` (a pod's address).
int connect_from(const std::string& from, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in src = gj::test::loopback_address(from, 0);
  sockaddr_in dst = gj::test::loopback_address("127.0.0.1", port);
  if (bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0)
    throw std::runtime_error("cannot connect from " + from + " to the monitor's port " + std::to_string(port));
  return fd;
}

void send_line(int fd, const std::string& line) {
  const std::string text = line + "\n";
  if (send(fd, text.data(), text.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(text.size()))
    throw std::runtime_error("send to the monitor failed");
}

// An SSH server as far as the probe sees one: each connection gets an identification line,
// then is read to its end.
class FakeSshd {
 public:
  FakeSshd(const std::string& ip, int port) : listener_(ip, port), thread_([this] { serve(); }) {}
  ~FakeSshd() {
    stop_ = true;
    thread_.join();
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{listener_.fd(), POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      const int c = accept(listener_.fd(), nullptr, nullptr);
      if (c < 0) continue;
      const char banner[] = "SSH-2.0-FakeSshd\r\n";
      (void)!send(c, banner, sizeof banner - 1, MSG_NOSIGNAL);
      char buf[256];
      while (recv(c, buf, sizeof buf, 0) > 0) {
      }
      close(c);
    }
  }
  gj::test::Listener listener_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A monitor, and what a wrapper needs to reach it.
struct Monitor {
  gj::JobMonitor monitor;
  int port;
  std::string token;
  explicit Monitor(const gj::MonitorOptions& o) : monitor(o) {
    const std::string endpoint = monitor.endpoint();  // "<port>,<token>,<address>,..."
    port = std::stoi(endpoint.substr(0, endpoint.find(',')));
    token = endpoint.substr(endpoint.find(',') + 1, 16);
  }
  // A wrapper of `rank` in `pod`, connected from `from`, that has said `start`.
  int wrapper(const std::string& from, int rank, const std::string& pod) {
    const int fd = connect_from(from, port);
    send_line(fd, gj::format_monitor_line("start", {{"token", token}, {"rank", std::to_string(rank)}, {"size", "3"},
                                                    {"local", "0"}, {"pod", pod}, {"pid", "100"}}));
    return fd;
  }
  bool wait_for_end(std::chrono::milliseconds within) {
    for (auto t = std::chrono::steady_clock::now() + within; std::chrono::steady_clock::now() < t;) {
      if (monitor.end_requested()) return true;
      std::this_thread::sleep_for(10ms);
    }
    return monitor.end_requested();
  }
};

gj::MonitorOptions options(int ssh_port) {
  gj::MonitorOptions o;
  o.master_pod = "job-master-0";
  o.ssh_port = ssh_port;
  o.probe = 500ms;
  return o;
}

}  // namespace

TEST_CASE("job monitor: of two pods whose wrappers all dropped, the one whose sshd answers is up - the other is lost") {
  const int ssh_port = gj::test::free_port();
  Monitor m(options(ssh_port));
  FakeSshd surviving("127.0.0.2", ssh_port);  // job-worker-0: its ranks killed, the pod up
  // job-worker-1 (127.0.0.3): nothing listens there, as when the pod was killed.
  const int w0 = m.wrapper("127.0.0.2", 1, "job-worker-0");
  const int w1 = m.wrapper("127.0.0.3", 2, "job-worker-1");
  std::this_thread::sleep_for(100ms);
  close(w0);  // the surviving pod's wrapper drops first, as hydra's teardown can make it
  std::this_thread::sleep_for(50ms);
  close(w1);
  REQUIRE(m.wait_for_end(2s));
  const gj::JobWatch watch = m.monitor.finish(100ms);
  REQUIRE(watch.dropped_pods().size() == 2);
  const auto t0 = std::chrono::steady_clock::now();
  const std::set<std::string> up = m.monitor.pods_still_up(watch);
  CHECK(std::chrono::steady_clock::now() - t0 < 2s);
  CHECK(up == std::set<std::string>{"job-worker-0"});
  CHECK(watch.report()->first.pod == "job-worker-0");  // by the order of the drops alone
  const auto rep = watch.report(up);
  REQUIRE(rep);
  CHECK(rep->first.pod == "job-worker-1");
  CHECK(rep->first.rank == 2);
  CHECK(rep->pod_lost);
  REQUIRE(rep->first.departure);
  // Not a silence: an end of stream, or (the wrapper's socket holding the monitor's unread
  // `lost` and `end` lines when it closed) a reset.
  const std::string how = rep->first.departure->how;
  CAPTURE(how);
  CHECK((how == "closed" || how == "failed (Connection reset by peer)"));
}

TEST_CASE("job monitor: one pod lost is told apart without a probe") {
  Monitor m(options(1));  // port 1 on 127.0.0.3 answers nothing; with one candidate nothing is probed
  close(m.wrapper("127.0.0.3", 1, "job-worker-1"));
  REQUIRE(m.wait_for_end(2s));
  const gj::JobWatch watch = m.monitor.finish(100ms);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(m.monitor.pods_still_up(watch).empty());
  CHECK(std::chrono::steady_clock::now() - t0 < 400ms);
  REQUIRE(watch.report());
  CHECK(watch.report()->first.pod == "job-worker-1");
}

TEST_CASE("job monitor: a silent wrapper is lost when its pod's sshd does not answer - not while it does") {
  const int ssh_port = gj::test::free_port();
  gj::MonitorOptions o = options(ssh_port);
  o.silence = 300ms;
  Monitor m(o);
  FakeSshd slow_pod("127.0.0.2", ssh_port);
  const int slow = m.wrapper("127.0.0.2", 1, "job-worker-0");  // no pings: late, its pod up
  std::this_thread::sleep_for(1500ms);                           // 5 silences
  CHECK_FALSE(m.monitor.end_requested());
  const int cut = m.wrapper("127.0.0.3", 2, "job-worker-1");  // no pings, no sshd: cut off
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(m.wait_for_end(3s));
  CHECK(std::chrono::steady_clock::now() - t0 >= 300ms);
  send_line(slow, "exit code=0");
  const gj::JobWatch watch = m.monitor.finish(500ms);
  const auto rep = watch.report();
  REQUIRE(rep);
  CHECK(rep->first.rank == 2);
  REQUIRE(rep->first.departure);
  CHECK(rep->first.departure->how ==
        "went silent (no ping for 300 ms, its pod's sshd at 127.0.0.3 did not answer)");
  for (const auto& [conn, r] : watch.ranks())
    if (r.rank == 1) CHECK((r.departure && r.departure->kind == gj::Departure::Kind::Exited));
  close(slow);
  close(cut);
}
