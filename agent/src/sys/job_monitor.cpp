#include "job_monitor.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "agent_error.h"
#include "exit_codes.h"
#include "internal.h"
#include "metrics_server.h"
#include "monitor_line.h"
#include "readiness.h"
#include "warnings.h"

namespace gj {
namespace {

std::string random_token() {
  std::random_device rd;
  const char* hex = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 16; ++i) out += hex[rd() % 16];
  return out;
}

// This pod's addresses, non-loopback first, loopback last (a rank on this pod reaches either).
std::vector<std::string> local_addresses() {
  std::vector<std::string> outer, loop;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
      if (a->ifa_addr == nullptr) continue;
      char buf[INET6_ADDRSTRLEN] = {0};
      if (a->ifa_addr->sa_family == AF_INET) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
        ::inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
        (ntohl(in->sin_addr.s_addr) >> 24 == 127 ? loop : outer).push_back(buf);
      } else if (a->ifa_addr->sa_family == AF_INET6) {
        const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a->ifa_addr);
        if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr)) continue;  // needs a scope id: not for other pods
        ::inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
        (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ? loop : outer).push_back(buf);
      }
    }
    ::freeifaddrs(list);
  }
  std::vector<std::string> out;
  for (auto* v : {&outer, &loop})
    for (const auto& a : *v)
      if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  if (out.empty()) out.push_back("127.0.0.1");
  return out;
}

// The numeric address of a peer ("10.0.0.3", "fd00::3"; an IPv4-mapped IPv6 address as IPv4).
std::string peer_address(const sockaddr_storage& a) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (a.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&a)->sin_addr, buf, sizeof buf);
  } else if (a.ss_family == AF_INET6) {
    const in6_addr& in6 = reinterpret_cast<const sockaddr_in6*>(&a)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&in6)) ::inet_ntop(AF_INET, &in6.s6_addr[12], buf, sizeof buf);
    else ::inet_ntop(AF_INET6, &in6, buf, sizeof buf);
  }
  return buf;
}

// The addresses (among `addresses`) whose sshd answers on `port` within `within`: an SSH
// identification exchange, not a bare connect (a frozen sshd's kernel still accepts).
std::set<std::string> sshd_answers(const std::vector<std::string>& addresses, int port,
                                   std::chrono::milliseconds within) {
  ReadinessOptions probe;
  probe.deadline = within;
  probe.connect_timeout = within;
  probe.progress_interval = within * 2;  // no progress lines
  probe.port = port;
  probe.ssh_identification = true;
  const ReadinessReport seen = wait_until_ready(addresses, probe, [](const std::string&) {});
  std::set<std::string> up;
  for (const HostStatus& h : seen.hosts)
    if (h.state == HostState::Ready) up.insert(h.host);
  return up;
}

struct Conn {
  int fd = -1;
  std::string in;
  std::string out;
  std::chrono::steady_clock::time_point heard;
};

}  // namespace

struct JobMonitor::State {
  MonitorOptions options;
  int listen_fd = -1;
  int wake[2] = {-1, -1};
  int port = 0;
  std::string token = random_token();
  std::vector<std::string> addresses = local_addresses();
  std::atomic<bool> end{false};
  // The stop request (request_stop): asked once, told to each wrapper once.
  std::atomic<bool> stop_asked{false};
  std::mutex stop_m;
  std::string stop_reason;
  std::set<int> stop_told;
  std::atomic<std::size_t> stop_pollers{0};
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> drain_until_ns{0};  // steady clock; 0: not draining
  JobWatch watch{token};
  JobView view;
  // The endpoint's text, rendered by the loop once a second (the view is the loop's alone).
  std::mutex metrics_m;
  std::string metrics_text;
  std::chrono::steady_clock::time_point next_metrics{};
  std::unique_ptr<MetricsServer> metrics;
  std::map<int, Conn> conns;  // by id
  std::map<int, std::string> peers;  // by id, kept after the connection closes
  int next_id = 1;
  std::thread thread;

  void apply(const WatchStep& step) {
    for (const auto& s : step.sends) {
      auto it = conns.find(s.conn);
      if (it != conns.end()) it->second.out += s.line + "\n";
    }
    for (int id : step.close) drop(id, false);
    if (step.job_failed_now) end = true;
    if (step.stop_request && !stop_asked) {
      warn("job monitor: " + *step.stop_request + "; asking every rank to stop");
      std::lock_guard<std::mutex> lock(stop_m);
      stop_reason = *step.stop_request;
      stop_asked = true;
    }
  }

  // Every started wrapper hears the stop request once (pass_stop: also those that start later).
  void pass_stop() {
    stop_pollers = watch.running_polling_stop();
    if (!stop_asked) return;
    std::string reason;
    {
      std::lock_guard<std::mutex> lock(stop_m);
      reason = stop_reason;
    }
    for (auto& [id, c] : conns)
      if (watch.ranks().count(id) != 0 && stop_told.insert(id).second)
        c.out += format_monitor_line("stop", {}, reason) + "\n";
  }

  // how: for the summary, how the connection ended ("closed", "went silent (...)", ...).
  void drop(int id, bool tell_watch, const std::string& how = "") {
    auto it = conns.find(id);
    if (it == conns.end()) return;
    ::close(it->second.fd);
    conns.erase(it);
    view.on_gone(id);
    if (tell_watch) apply(watch.on_drop(id, realtime_ns(), how));
  }

  static std::int64_t steady_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // The view's part of a line from a started wrapper (progress, samples, diagnoses).
  void to_view(int id, const std::string& text) {
    const auto r = watch.ranks().find(id);
    if (r == watch.ranks().end()) return;
    const auto line = parse_monitor_line(text);
    if (!line) return;
    if (line->verb == "exit") {
      view.on_gone(id);
      return;
    }
    view.on_line(id, RankIdentity{r->second.rank, r->second.local_rank, r->second.pod}, *line, steady_ms());
  }

  void view_tick() {
    ViewStep step = view.tick(steady_ms());
    if (metrics && std::chrono::steady_clock::now() >= next_metrics) {
      next_metrics = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      std::string text = view.prometheus_text(watch.failing());
      std::lock_guard<std::mutex> lock(metrics_m);
      metrics_text = std::move(text);
    }
    for (int id : step.diagnose) {
      auto it = conns.find(id);
      if (it != conns.end()) it->second.out += "diag\n";
    }
    for (const auto& line : step.warn_lines) warn(line);
    for (const auto& line : step.info_lines) {
      if (options.info) options.info(line);
      else warn(line);
    }
    for (auto& h : step.hung) apply(watch.on_hang(h.conn, realtime_ns(), std::move(h.what), std::move(h.stack)));
  }

  void flush(int id) {
    Conn& c = conns[id];
    while (!c.out.empty()) {
      const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        c.out.erase(0, static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
      return;  // the peer is gone: reading will say so
    }
  }

  void accept_all() {
    for (;;) {
      sockaddr_storage from{};
      socklen_t len = sizeof from;
      const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&from), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      peers[next_id] = peer_address(from);
      conns[next_id++] = Conn{fd, {}, {}, std::chrono::steady_clock::now()};
    }
  }

  void read_from(int id) {
    Conn& c = conns[id];
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        c.in.append(buf, static_cast<std::size_t>(n));
        c.heard = std::chrono::steady_clock::now();
        for (const auto& line : take_lines(c.in)) {
          apply(watch.on_line(id, line, realtime_ns()));
          to_view(id, line);
          if (conns.find(id) == conns.end()) return;  // closed by the step
        }
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
      drop(id, true, n == 0 ? "closed" : std::string("failed (") + std::strerror(errno) + ")");
      return;
    }
  }

  // Connections silent for options.silence: lost, unless their pod's sshd answers. A pod that
  // answers is up and reachable, its wrapper's pings late (measured: a loaded 2-vCPU machine with
  // 6 ranks over 3 pods delayed them past 10 s and the job was ended for a pod that was fine);
  // its wrappers get another period. A cut network or a frozen pod does not answer.
  void check_silence() {
    const auto now = std::chrono::steady_clock::now();
    std::vector<int> silent;
    std::vector<std::string> silent_at;  // their addresses, once each
    for (auto& [id, c] : conns)
      if (now - c.heard > options.silence) {
        silent.push_back(id);
        if (std::find(silent_at.begin(), silent_at.end(), peers[id]) == silent_at.end()) silent_at.push_back(peers[id]);
      }
    if (silent.empty()) return;
    const std::set<std::string> up = sshd_answers(silent_at, options.ssh_port, options.probe);
    const auto ms = options.silence.count();
    const std::string silence = ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
    for (int id : silent) {
      if (up.count(peers[id]) == 0) {
        drop(id, true, "went silent (no ping for " + silence + ", its pod's sshd at " + peers[id] +
                           " did not answer)");
        continue;
      }
      conns[id].heard = std::chrono::steady_clock::now();
      const auto r = watch.ranks().find(id);
      warn("job monitor: no ping from " +
           (r != watch.ranks().end() ? "rank " + std::to_string(r->second.rank) + "'s wrapper" : std::string("a wrapper")) +
           " at " + peers[id] + " for " + silence + ", but its pod's sshd answers: still waiting");
    }
  }

  void loop() {
    while (!stop) {
      std::vector<pollfd> fds;
      std::vector<int> ids;
      fds.push_back({wake[0], POLLIN, 0});
      fds.push_back({listen_fd, POLLIN, 0});
      for (auto& [id, c] : conns) {
        fds.push_back({c.fd, static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
        ids.push_back(id);
      }
      if (::poll(fds.data(), fds.size(), 200) < 0 && errno != EINTR) return;
      if (fds[0].revents != 0) {
        char b[64];
        while (::read(wake[0], b, sizeof b) > 0) {
        }
      }
      if (fds[1].revents & POLLIN) accept_all();
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (conns.find(ids[i]) == conns.end()) continue;
        if (fds[i + 2].revents & (POLLIN | POLLHUP | POLLERR)) read_from(ids[i]);
      }
      check_silence();
      if (!watch.failing()) view_tick();
      pass_stop();
      for (auto& [id, c] : conns) flush(id);
      // A failed rank's wrapper waits for its peers to be told and to end (rank_guard.h); once
      // no rank with the library is left to raise, closing the departed ranks' connections lets
      // the lingering wrappers go (the launcher then ends the rest).
      if (watch.failing() && watch.running_with_library() == 0) {
        std::vector<int> departed;
        for (auto& [id, c] : conns) {
          const auto it = watch.ranks().find(id);
          if (it != watch.ranks().end() && it->second.departure) departed.push_back(id);
        }
        for (int id : departed) {
          ::close(conns[id].fd);
          conns.erase(id);
        }
      }
      const std::int64_t until = drain_until_ns;
      if (until != 0 && (watch.running() == 0 ||
                         std::chrono::steady_clock::now().time_since_epoch().count() >= until))
        return;
    }
  }
};

JobMonitor::JobMonitor(MonitorOptions options) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.watch = JobWatch(s.token, options.master_pod);
  s.view = JobView(options.view);
  s.options = std::move(options);
  const bool v6 = std::any_of(s.addresses.begin(), s.addresses.end(), [](const std::string& a) { return a.find(':') != std::string::npos; });
  s.listen_fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s.listen_fd < 0 && v6) s.listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s.listen_fd < 0) throw_syscall_error("socket (the job monitor)", errno);
  sockaddr_storage addr{};
  socklen_t len = 0;
  int domain = 0;
  socklen_t dlen = sizeof domain;
  ::getsockopt(s.listen_fd, SOL_SOCKET, SO_DOMAIN, &domain, &dlen);
  if (domain == AF_INET6) {
    int off = 0;
    ::setsockopt(s.listen_fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&addr);
    a6->sin6_family = AF_INET6;
    a6->sin6_addr = in6addr_any;
    len = sizeof *a6;
  } else {
    auto* a4 = reinterpret_cast<sockaddr_in*>(&addr);
    a4->sin_family = AF_INET;
    a4->sin_addr.s_addr = htonl(INADDR_ANY);
    len = sizeof *a4;
    s.addresses.erase(std::remove_if(s.addresses.begin(), s.addresses.end(),
                                     [](const std::string& a) { return a.find(':') != std::string::npos; }),
                      s.addresses.end());
  }
  if (::bind(s.listen_fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) throw_syscall_error("bind (the job monitor)", errno);
  if (::listen(s.listen_fd, 1024) != 0) throw_syscall_error("listen (the job monitor)", errno);
  sockaddr_storage bound{};
  socklen_t blen = sizeof bound;
  ::getsockname(s.listen_fd, reinterpret_cast<sockaddr*>(&bound), &blen);
  s.port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  if (::pipe2(s.wake, O_CLOEXEC | O_NONBLOCK) != 0) throw_syscall_error("pipe2 (the job monitor)", errno);
  if (s.options.metrics_port > 0) {
    try {
      s.metrics = std::make_unique<MetricsServer>(s.options.metrics_port, [&s] {
        std::lock_guard<std::mutex> lock(s.metrics_m);
        return s.metrics_text;
      });
    } catch (const LaunchError& e) {
      warn("job monitor: no metrics endpoint: " + e.message);
    }
  }
  s.thread = std::thread([&s] { s.loop(); });
}

JobMonitor::~JobMonitor() {
  State& s = *state_;
  s.metrics.reset();
  s.stop = true;
  if (s.wake[1] >= 0) {
    ssize_t n = ::write(s.wake[1], "x", 1);
    (void)n;
  }
  if (s.thread.joinable()) s.thread.join();
  for (auto& [id, c] : s.conns) ::close(c.fd);
  for (int fd : {s.listen_fd, s.wake[0], s.wake[1]})
    if (fd >= 0) ::close(fd);
}

std::string JobMonitor::endpoint() const {
  std::string out = std::to_string(state_->port) + "," + state_->token;
  for (const auto& a : state_->addresses) out += "," + a;
  return out;
}

bool JobMonitor::request_stop(const std::string& reason) {
  State& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.stop_m);
    if (s.stop_reason.empty()) s.stop_reason = reason;
  }
  s.stop_asked = true;
  ssize_t n = ::write(s.wake[1], "x", 1);
  (void)n;
  return s.stop_pollers.load() > 0;
}

const std::atomic<bool>& JobMonitor::end_requested() const { return state_->end; }

JobWatch JobMonitor::finish(std::chrono::milliseconds drain) {
  State& s = *state_;
  s.drain_until_ns = (std::chrono::steady_clock::now() + drain).time_since_epoch().count();
  ssize_t n = ::write(s.wake[1], "x", 1);
  (void)n;
  if (s.thread.joinable()) s.thread.join();
  for (auto& [id, c] : s.conns) ::close(c.fd);
  s.conns.clear();
  return s.watch;
}

std::vector<std::string> JobMonitor::end_lines() const { return state_->view.end_lines(); }

std::set<std::string> JobMonitor::pods_still_up(const JobWatch& watch) const {
  const auto candidates = watch.dropped_pods();
  if (candidates.size() < 2) return {};
  std::map<std::string, std::string> by_address;  // a candidate pod's address -> the pod
  for (const auto& [pod, conns] : candidates) {
    const auto it = state_->peers.find(conns.front());
    if (it != state_->peers.end() && !it->second.empty()) by_address[it->second] = pod;
  }
  std::vector<std::string> addresses;
  for (const auto& [address, pod] : by_address) addresses.push_back(address);
  std::set<std::string> up;
  for (const auto& address : sshd_answers(addresses, state_->options.ssh_port, state_->options.probe))
    up.insert(by_address[address]);
  return up;
}

}  // namespace gj
