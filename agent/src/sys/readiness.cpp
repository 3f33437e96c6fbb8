// The readiness gate: one epoll loop drives every host through resolve -> TCP connect ->
// (optional) ssh login, with capped exponential backoff per host. No thread per host; the
// resolver's UDP sockets, every connecting socket and every ssh check's output pipe live in
// the same epoll set, and per-host timers in one heap.
#include "readiness.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <memory>
#include <queue>

#include "exit_codes.h"
#include "internal.h"
#include "agent_error.h"
#include "capture.h"
#include "child_exit.h"
#include "spawn.h"
#include "quote.h"
#include "resolver.h"

namespace gj {

const char* to_string(HostState s) {
  switch (s) {
    case HostState::Pending: return "pending";
    case HostState::Unresolvable: return "unresolvable";
    case HostState::Refused: return "refused";
    case HostState::TimedOut: return "timed-out";
    case HostState::ConnectFailed: return "connect-failed";
    case HostState::SshFailed: return "ssh-failed";
    case HostState::Ready: return "ready";
  }
  return "?";
}

std::string readiness_summary(const std::vector<HostStatus>& hosts, std::size_t max_listed) {
  std::size_t ready = 0;
  std::vector<const HostStatus*> waiting;
  for (const auto& h : hosts) {
    if (h.state == HostState::Ready) ++ready;
    else waiting.push_back(&h);
  }
  std::string out = std::to_string(ready) + "/" + std::to_string(hosts.size()) + " hosts ready";
  if (waiting.empty()) return out;
  out += "; waiting for ";
  for (std::size_t i = 0; i < waiting.size() && i < max_listed; ++i) {
    if (i > 0) out += ", ";
    out += waiting[i]->host + ": " + (waiting[i]->detail.empty() ? "not probed yet" : waiting[i]->detail);
  }
  if (waiting.size() > max_listed) out += ", and " + std::to_string(waiting.size() - max_listed) + " more";
  return out;
}

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::uint64_t kResolverTag = 0;
constexpr std::uint64_t kConnectKind = 1;
constexpr std::uint64_t kLoginKind = 2;
constexpr std::uint64_t kIdentKind = 3;
// Our side of the SSH identification exchange (RFC 4253 4.2); sshd logs it at debug level only.
constexpr char kProbeIdentification[] = "SSH-2.0-gj-mpirun-readiness\r\n";
std::uint64_t event_tag(std::uint64_t kind, std::size_t host) { return (kind << 56) | (host + 1); }

enum class Phase { Idle, Resolving, ConnectQueued, Connecting, Identifying, Closing, LoginQueued, LoggingIn, Done };

struct Probe {
  Phase phase = Phase::Idle;
  std::vector<IpAddress> addresses;
  IpAddress target;
  int fd = -1;      // connecting socket
  int pid = -1;     // ssh login check
  int out_fd = -1;  // its stdout+stderr
  std::string output;
  Clock::time_point op_deadline;
  milliseconds backoff{0};
  std::uint64_t timer_generation = 0;
  std::uint32_t random = 0;
};

struct Timer {
  Clock::time_point at;
  std::size_t host;
  std::uint64_t generation;
  bool operator>(const Timer& o) const { return at > o.at; }
};

// Many hosts need many sockets at once; the soft limit is often 1024 while the hard one is not.
std::size_t raise_fd_limit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit want = rl;
    want.rlim_cur = std::min<rlim_t>(rl.rlim_max, 1 << 20);
    if (::setrlimit(RLIMIT_NOFILE, &want) == 0) rl = want;
  }
  return static_cast<std::size_t>(rl.rlim_cur);
}

class Gate {
 public:
  Gate(const std::vector<std::string>& hosts, const ReadinessOptions& opts,
       const std::function<void(const std::string&)>& progress)
      : opts_(opts), progress_(progress), probes_(hosts.size()) {
    status_.resize(hosts.size());
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      status_[i].host = hosts[i];
      probes_[i].random = static_cast<std::uint32_t>(i * 2654435761u + 1u);
    }
    epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epoll_ < 0) throw LaunchError{exit_code::kInternal, std::string("epoll_create1 failed: ") + std::strerror(errno)};
    const std::size_t fds = raise_fd_limit();
    max_connects_ = fds > 256 ? fds - 128 : 64;
    ResolverConfig rc;
    rc.hosts_file = opts.hosts_file;
    rc.resolv_conf = opts.resolv_conf;
    rc.dns_port = opts.dns_port;
    rc.query_timeout = opts.dns_timeout;
    resolver_ = std::make_unique<AsyncResolver>(epoll_, kResolverTag, rc);
  }

  ~Gate() {
    for (auto& p : probes_) {
      if (p.fd >= 0) ::close(p.fd);
      if (p.out_fd >= 0) ::close(p.out_fd);
      if (p.pid > 0) {
        ::kill(p.pid, SIGKILL);
        try {
          wait_exit(p.pid);
        } catch (const LaunchError&) {
        }
      }
    }
    resolver_.reset();
    ::close(epoll_);
  }

  ReadinessReport run() {
    const Clock::time_point start = Clock::now();
    const Clock::time_point deadline = start + opts_.deadline;
    Clock::time_point next_progress = start + opts_.progress_interval;
    for (std::size_t i = 0; i < probes_.size(); ++i) set_timer(i, start);
    epoll_event events[256];
    for (;;) {
      Clock::time_point now = Clock::now();
      fire_timers(now);
      resolver_->on_tick(now);
      handle_resolutions(now);
      if (ready_ == probes_.size() || now >= deadline) break;
      if (now >= next_progress) {
        if (progress_) progress_(readiness_summary(status_));
        while (next_progress <= now) next_progress += opts_.progress_interval;
      }
      Clock::time_point wake = std::min(deadline, next_progress);
      if (!timers_.empty()) wake = std::min(wake, timers_.top().at);
      if (auto d = resolver_->next_deadline()) wake = std::min(wake, *d);
      auto wait_us = std::chrono::duration_cast<std::chrono::microseconds>(wake - now).count();
      int timeout_ms = wait_us <= 0 ? 0 : static_cast<int>((wait_us + 999) / 1000);
      int n = ::epoll_wait(epoll_, events, 256, timeout_ms);
      if (n < 0 && errno != EINTR)
        throw LaunchError{exit_code::kInternal, std::string("epoll_wait failed: ") + std::strerror(errno)};
      now = Clock::now();
      for (int e = 0; e < n; ++e) dispatch(events[e].data.u64, now);
      handle_resolutions(now);
    }
    describe_unfinished_probes();
    ReadinessReport report;
    report.all_ready = ready_ == probes_.size();
    report.elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
    report.hosts = status_;
    return report;
  }

 private:
  // A host whose probe was still running at the deadline has no recorded result yet: say what
  // that probe had seen, not "not probed yet".
  void describe_unfinished_probes() {
    for (std::size_t i = 0; i < probes_.size(); ++i) {
      if (status_[i].state == HostState::Ready || !status_[i].detail.empty()) continue;
      const Probe& p = probes_[i];
      switch (p.phase) {
        case Phase::Resolving: {
          const std::string seen = resolver_->in_flight_note(i);
          status_[i].state = HostState::Unresolvable;
          status_[i].detail = "name lookup still unanswered at the deadline" + (seen.empty() ? "" : ": " + seen);
          break;
        }
        case Phase::ConnectQueued:
        case Phase::Connecting:
          status_[i].state = HostState::TimedOut;
          status_[i].detail = "TCP connect still pending at the deadline" +
                              (p.phase == Phase::Connecting ? " (" + where(p) + ")" : std::string());
          break;
        case Phase::Identifying:
        case Phase::Closing:
          status_[i].state = HostState::TimedOut;
          status_[i].detail = "TCP ok; the SSH banner exchange was still running at the deadline (" + where(p) + ")";
          break;
        case Phase::LoginQueued:
        case Phase::LoggingIn:
          status_[i].state = HostState::SshFailed;
          status_[i].detail = "TCP ok; the ssh login check was still running at the deadline";
          break;
        default:
          break;
      }
    }
  }

  void set_timer(std::size_t i, Clock::time_point at) {
    timers_.push({at, i, ++probes_[i].timer_generation});
  }

  void fire_timers(Clock::time_point now) {
    while (!timers_.empty() && timers_.top().at <= now) {
      Timer t = timers_.top();
      timers_.pop();
      if (t.generation == probes_[t.host].timer_generation) on_timer(t.host, now);
    }
  }

  void on_timer(std::size_t i, Clock::time_point now) {
    Probe& p = probes_[i];
    switch (p.phase) {
      case Phase::Idle:
        begin_attempt(i, now);
        break;
      case Phase::Connecting:
        close_connect(i);
        record_failure(i, HostState::TimedOut,
             "connect timed out after " + std::to_string(opts_.connect_timeout.count()) + " ms (" + where(p) + ")", now);
        break;
      case Phase::Identifying:
        close_connect(i);
        record_failure(i, HostState::TimedOut,
                       "no SSH banner within " + std::to_string(opts_.connect_timeout.count()) + " ms (" + where(p) + ")",
                       now);
        break;
      case Phase::Closing:  // the banner came; the server is slow to close: ready all the same
        close_connect(i);
        tcp_ok(i, now);
        break;
      case Phase::LoggingIn:
        if (now >= p.op_deadline) {
          ::kill(p.pid, SIGKILL);
          end_login(i, -1, now);
        } else {
          check_login_exit(i, now);
        }
        break;
      default:
        break;
    }
  }

  void begin_attempt(std::size_t i, Clock::time_point now) {
    ++status_[i].attempts;
    probes_[i].phase = Phase::Resolving;
    resolver_->start(i, status_[i].host, now);
  }

  void handle_resolutions(Clock::time_point now) {
    for (auto& r : resolver_->take_completed()) {
      Probe& p = probes_[r.token];
      if (p.phase != Phase::Resolving) continue;
      if (r.addresses.empty()) {
        record_failure(r.token, HostState::Unresolvable, "name not resolvable: " + r.reason, now);
        continue;
      }
      p.addresses = std::move(r.addresses);
      p.phase = Phase::ConnectQueued;
      connect_queue_.push_back(r.token);
    }
    pump_connects(now);
  }

  std::string where(const Probe& p) const { return p.target.to_string() + ":" + std::to_string(opts_.port); }

  void pump_connects(Clock::time_point now) {
    while (connects_ < max_connects_ && !connect_queue_.empty()) {
      std::size_t i = connect_queue_.front();
      connect_queue_.pop_front();
      start_connect(i, now);
    }
  }

  void start_connect(std::size_t i, Clock::time_point now) {
    Probe& p = probes_[i];
    // Rotate through the addresses over attempts, so one dead address does not block a host.
    p.target = p.addresses[static_cast<std::size_t>(status_[i].attempts - 1) % p.addresses.size()];
    sockaddr_storage sa{};
    socklen_t len = p.target.to_sockaddr(opts_.port, &sa);
    p.fd = ::socket(p.target.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (p.fd < 0) {
      record_failure(i, HostState::ConnectFailed, std::string("socket failed: ") + std::strerror(errno), now);
      return;
    }
    ++connects_;
    if (::connect(p.fd, reinterpret_cast<sockaddr*>(&sa), len) == 0) {
      connected(i, now);
      return;
    }
    if (errno != EINPROGRESS) {
      int e = errno;
      close_connect(i);
      connect_failed(i, e, now);
      return;
    }
    epoll_event ev{};
    ev.events = EPOLLOUT;
    ev.data.u64 = event_tag(kConnectKind, i);
    if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, p.fd, &ev) != 0)
      throw LaunchError{exit_code::kInternal, std::string("epoll_ctl(ADD) failed: ") + std::strerror(errno)};
    p.phase = Phase::Connecting;
    set_timer(i, now + opts_.connect_timeout);
  }

  void close_connect(std::size_t i) {
    Probe& p = probes_[i];
    if (p.fd >= 0) {
      ::close(p.fd);
      p.fd = -1;
      --connects_;
    }
  }

  void connect_failed(std::size_t i, int err, Clock::time_point now) {
    const std::string at = " (" + where(probes_[i]) + ")";
    if (err == ECONNREFUSED) record_failure(i, HostState::Refused, "connection refused" + at, now);
    else if (err == ETIMEDOUT) record_failure(i, HostState::TimedOut, "connect timed out" + at, now);
    else record_failure(i, HostState::ConnectFailed, std::string(std::strerror(err)) + at, now);
  }

  void dispatch(std::uint64_t tag, Clock::time_point now) {
    if (tag == kResolverTag) {
      resolver_->on_readable(now);
      return;
    }
    const std::uint64_t kind = tag >> 56;
    const std::size_t i = static_cast<std::size_t>((tag & ((1ull << 56) - 1)) - 1);
    if (kind == kConnectKind && probes_[i].phase == Phase::Connecting) {
      int err = 0;
      socklen_t len = sizeof err;
      if (::getsockopt(probes_[i].fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      if (err == 0) {
        connected(i, now);
      } else {
        close_connect(i);
        connect_failed(i, err, now);
      }
      pump_connects(now);
    } else if (kind == kIdentKind && (probes_[i].phase == Phase::Identifying || probes_[i].phase == Phase::Closing)) {
      read_identification(i, now);
      pump_connects(now);
    } else if (kind == kLoginKind && probes_[i].phase == Phase::LoggingIn) {
      read_login_output(i, now);
    }
  }

  // TCP connected: ready (or on to the login check), or first the SSH identification exchange.
  void connected(std::size_t i, Clock::time_point now) {
    if (!opts_.ssh_identification) {
      close_connect(i);
      tcp_ok(i, now);
      return;
    }
    Probe& p = probes_[i];
    if (::send(p.fd, kProbeIdentification, sizeof kProbeIdentification - 1, MSG_NOSIGNAL) !=
        static_cast<ssize_t>(sizeof kProbeIdentification - 1)) {
      const int e = errno;
      close_connect(i);
      connect_failed(i, e, now);
      return;
    }
    ::epoll_ctl(epoll_, EPOLL_CTL_DEL, p.fd, nullptr);  // registered for EPOLLOUT when connect was pending
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = event_tag(kIdentKind, i);
    if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, p.fd, &ev) != 0)
      throw LaunchError{exit_code::kInternal, std::string("epoll_ctl(ADD) failed: ") + std::strerror(errno)};
    p.output.clear();
    p.phase = Phase::Identifying;
    set_timer(i, now + opts_.connect_timeout);
  }

  // Identifying: the server's first line must start with "SSH-"; then we send FIN and read to
  // EOF (Closing), so that sshd sees an orderly close and no reset.
  void read_identification(std::size_t i, Clock::time_point now) {
    Probe& p = probes_[i];
    char buf[512];
    for (;;) {
      const ssize_t n = ::recv(p.fd, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      if (n > 0 && p.phase == Phase::Closing) continue;  // sshd's key exchange offer: not read
      if (n > 0) {
        p.output.append(buf, static_cast<std::size_t>(n));
        const auto eol = p.output.find('\n');
        if (eol == std::string::npos && p.output.size() < 256) continue;
        if (p.output.compare(0, 4, "SSH-") != 0) {
          const std::string first = p.output.substr(0, std::min<std::size_t>(eol, 64));
          close_connect(i);
          record_failure(i, HostState::ConnectFailed,
                         "port answers but not as an SSH server (first bytes " + quoted_value(first) + ", " + where(p) + ")",
                         now);
          return;
        }
        ::shutdown(p.fd, SHUT_WR);
        p.phase = Phase::Closing;
        set_timer(i, now + opts_.connect_timeout);
        continue;
      }
      // EOF (or an error): after the banner the exchange is done; before it, sshd refused us
      // (MaxStartups, a TCP wrapper) or something else listens there.
      const bool banner_seen = p.phase == Phase::Closing;
      close_connect(i);
      if (banner_seen) tcp_ok(i, now);
      else record_failure(i, HostState::ConnectFailed, "connection closed before an SSH banner (" + where(p) + ")", now);
      return;
    }
  }

  void tcp_ok(std::size_t i, Clock::time_point now) {
    if (opts_.ssh_login_prefix.empty()) {
      mark_ready(i, now);
      return;
    }
    probes_[i].phase = Phase::LoginQueued;
    login_queue_.push_back(i);
    pump_logins(now);
  }

  void pump_logins(Clock::time_point now) {
    while (logins_ < std::max(1, opts_.max_parallel_logins) && !login_queue_.empty()) {
      std::size_t i = login_queue_.front();
      login_queue_.pop_front();
      start_login(i, now);
    }
  }

  void start_login(std::size_t i, Clock::time_point now) {
    Probe& p = probes_[i];
    std::vector<std::string> argv = opts_.ssh_login_prefix;
    argv.push_back(status_[i].host);
    argv.push_back("true");
    SpawnOptions so;
    so.capture_output = true;
    ChildProcess child;
    try {
      child = spawn_process(argv, so);
    } catch (const LaunchError& e) {
      record_failure(i, HostState::SshFailed, "ssh login check could not start: " + e.message, now);
      return;
    }
    ++logins_;
    p.pid = child.pid;
    p.out_fd = child.output_fd;
    p.output.clear();
    p.phase = Phase::LoggingIn;
    p.op_deadline = now + opts_.login_timeout;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = event_tag(kLoginKind, i);
    if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, p.out_fd, &ev) != 0)
      throw LaunchError{exit_code::kInternal, std::string("epoll_ctl(ADD) failed: ") + std::strerror(errno)};
    set_timer(i, p.op_deadline);
  }

  void read_login_output(std::size_t i, Clock::time_point now) {
    Probe& p = probes_[i];
    char buf[1024];
    for (;;) {
      ssize_t n = ::read(p.out_fd, buf, sizeof buf);
      if (n > 0) {
        p.output.append(buf, static_cast<std::size_t>(n));
        if (p.output.size() > 4096) p.output.erase(0, p.output.size() - 4096);  // keep the tail
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      break;  // EOF (or an error: treat alike)
    }
    ::close(p.out_fd);
    p.out_fd = -1;
    check_login_exit(i, now);
  }

  void check_login_exit(std::size_t i, Clock::time_point now) {
    Probe& p = probes_[i];
    if (p.out_fd >= 0) {  // still reading; only the deadline matters
      set_timer(i, p.op_deadline);
      return;
    }
    auto status = poll_exit(p.pid);
    if (!status) {  // closed its output but has not exited yet
      set_timer(i, std::min(p.op_deadline, now + milliseconds(5)));
      return;
    }
    end_login(i, *status, now);
  }

  // status < 0: killed at the login deadline.
  void end_login(std::size_t i, int status, Clock::time_point now) {
    Probe& p = probes_[i];
    if (p.out_fd >= 0) {
      ::close(p.out_fd);
      p.out_fd = -1;
    }
    if (status < 0) wait_exit(p.pid);
    p.pid = -1;
    --logins_;
    if (status == 0) mark_ready(i, now);
    else if (status < 0)
      record_failure(i, HostState::SshFailed,
           "ssh login check timed out after " + std::to_string(opts_.login_timeout.count()) + " ms", now);
    else
      record_failure(i, HostState::SshFailed, "ssh login failed (status " + std::to_string(status) + "): " + last_line(p.output), now);
    pump_logins(now);
  }

  void mark_ready(std::size_t i, Clock::time_point now) {
    probes_[i].phase = Phase::Done;
    ++probes_[i].timer_generation;
    status_[i].state = HostState::Ready;
    status_[i].detail = "ready (" + where(probes_[i]) + ")";
    status_[i].ready_at = now;
    ++ready_;
  }

  // Records why host i is not ready yet and schedules its next probe (the gate retries until
  // its deadline; nothing is thrown).
  void record_failure(std::size_t i, HostState state, std::string detail, Clock::time_point now) {
    Probe& p = probes_[i];
    status_[i].state = state;
    status_[i].detail = std::move(detail);
    p.phase = Phase::Idle;
    const milliseconds cap = state == HostState::Refused ? std::min(opts_.refused_backoff_cap, opts_.max_backoff)
                                                         : opts_.max_backoff;
    p.backoff = std::min(cap, p.backoff.count() == 0 ? milliseconds(25) : p.backoff * 2);
    // +-25% jitter (xorshift per host), so thousands of hosts do not retry in lockstep.
    p.random ^= p.random << 13;
    p.random ^= p.random >> 17;
    p.random ^= p.random << 5;
    const double factor = 0.75 + 0.5 * (p.random % 1000) / 1000.0;
    set_timer(i, now + std::chrono::duration_cast<Clock::duration>(p.backoff * factor));
  }

  const ReadinessOptions& opts_;
  const std::function<void(const std::string&)>& progress_;
  std::vector<Probe> probes_;
  std::vector<HostStatus> status_;
  int epoll_ = -1;
  std::unique_ptr<AsyncResolver> resolver_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
  std::deque<std::size_t> connect_queue_, login_queue_;
  std::size_t connects_ = 0, max_connects_ = 64, ready_ = 0;
  int logins_ = 0;
};

}  // namespace

ReadinessReport wait_until_ready(const std::vector<std::string>& hosts, const ReadinessOptions& opts,
                                 const std::function<void(const std::string&)>& progress) {
  Gate gate(hosts, opts, progress);
  return gate.run();
}

}  // namespace gj
