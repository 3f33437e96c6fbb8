#include "net_probe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "exit_codes.h"
#include "internal.h"
#include "ip_address.h"

namespace gj {
namespace {

using Clock = std::chrono::steady_clock;

// The link protocol, client to server: 'P' + 63 bytes (echoed), 'B' + 8-byte length + that many
// bytes (answered by 'A'), 'E' (done).
constexpr std::size_t kPingBytes = 64;
constexpr std::size_t kChunk = 256 * 1024;

void set_timeouts(int fd, Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now()).count();
  if (left < 1000) left = 1000;
  timeval tv{static_cast<time_t>(left / 1000000), static_cast<suseconds_t>(left % 1000000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

bool read_full(int fd, char* buf, std::size_t n) {
  while (n > 0) {
    const ssize_t r = ::recv(fd, buf, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    buf += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

bool write_full(int fd, const char* buf, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, buf, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    buf += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

// One pod measuring its link to this one, until it says 'E', closes, or the budget ends.
void serve(int fd, Clock::time_point deadline, std::atomic<std::size_t>& done) {
  set_timeouts(fd, deadline);
  std::vector<char> buf(kChunk);
  for (;;) {
    char cmd = 0;
    if (!read_full(fd, &cmd, 1)) break;
    if (cmd == 'P') {
      buf[0] = 'P';
      if (!read_full(fd, buf.data() + 1, kPingBytes - 1) || !write_full(fd, buf.data(), kPingBytes)) break;
    } else if (cmd == 'B') {
      unsigned char len[8];
      if (!read_full(fd, reinterpret_cast<char*>(len), 8)) break;
      std::uint64_t left = 0;
      for (unsigned char b : len) left = (left << 8) | b;
      bool ok = true;
      while (left > 0 && ok) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, kChunk));
        ok = read_full(fd, buf.data(), n);
        left -= n;
      }
      if (!ok || !write_full(fd, "A", 1)) break;
    } else {
      if (cmd == 'E') ++done;
      break;
    }
  }
  ::close(fd);
}

int connect_until(const IpAddress& addr, int port, Clock::time_point deadline, std::string& error) {
  sockaddr_storage sa{};
  const socklen_t len = addr.to_sockaddr(port, &sa);
  while (Clock::now() < deadline) {
    const int fd = ::socket(addr.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      error = std::string("socket: ") + std::strerror(errno);
      return -1;
    }
    set_timeouts(fd, std::min(deadline, Clock::now() + std::chrono::seconds(1)));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), len) == 0) {
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      set_timeouts(fd, deadline);
      return fd;
    }
    error = std::string("connect: ") + std::strerror(errno);
    ::close(fd);
    // The peer's probe may not listen yet (its ssh session started later): retry shortly.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (error.empty()) error = "no time left to connect";
  return -1;
}

LinkResult measure(std::size_t self, std::size_t to, const std::string& address, const NetProbeOptions& o,
                   Clock::time_point deadline) {
  LinkResult r;
  r.from = self;
  r.to = to;
  const auto addr = parse_ip(address);
  if (!addr) {
    r.error = "no address for the pod";
    return r;
  }
  const int fd = connect_until(*addr, o.port, deadline, r.error);
  if (fd < 0) {
    r.error += " (" + address + ":" + std::to_string(o.port) + ")";
    return r;
  }
  r.error.clear();
  std::vector<char> buf(kChunk, 0);
  std::vector<double> rtts;
  for (int i = 0; i < kNetPings; ++i) {
    buf[0] = 'P';
    const auto t0 = Clock::now();
    if (!write_full(fd, buf.data(), kPingBytes) || !read_full(fd, buf.data(), kPingBytes)) {
      r.error = "round trip " + std::to_string(i + 1) + " did not complete within the budget";
      ::close(fd);
      return r;
    }
    rtts.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  // The fastest round trip and the faster of two transfers: on a busy pod, scheduling only
  // ever adds time, so the best figure is the link's and a slow link has no fast one.
  r.rtt_us = *std::min_element(rtts.begin(), rtts.end());
  const auto total = static_cast<std::uint64_t>(o.bytes);
  for (int round = 0; round < kNetTransfers; ++round) {
    unsigned char hdr[9] = {'B'};
    for (int i = 0; i < 8; ++i) hdr[1 + i] = static_cast<unsigned char>(total >> (56 - 8 * i));
    const auto t0 = Clock::now();
    bool ok = write_full(fd, reinterpret_cast<const char*>(hdr), sizeof hdr);
    std::uint64_t sent = 0;
    while (ok && sent < total) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(total - sent, kChunk));
      ok = write_full(fd, buf.data(), n);
      if (ok) sent += n;
    }
    char ack = 0;
    ok = ok && read_full(fd, &ack, 1) && ack == 'A';
    const double secs = std::max(std::chrono::duration<double>(Clock::now() - t0).count(), 1e-9);
    // What got through before the budget ended is still a figure: the link's upper bound.
    r.bytes_per_s = std::max(r.bytes_per_s, static_cast<double>(sent) / secs);
    if (!ok) {
      if (round == 0)
        r.error = std::to_string(sent >> 10) + " KiB of " + std::to_string(total >> 10) + " KiB sent within the budget";
      ::close(fd);
      return r;
    }
  }
  write_full(fd, "E", 1);
  ::close(fd);
  return r;
}

}  // namespace

std::vector<LinkResult> run_net_probe(const NetProbeOptions& o) {
  const auto deadline = Clock::now() + o.budget;
  const std::size_t n = o.addresses.size();
  const auto self_addr = o.self < n ? parse_ip(o.addresses[o.self]) : std::nullopt;
  const int family = self_addr ? self_addr->family : AF_INET;
  const int lfd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (lfd < 0) throw_syscall_error("socket", errno);
  const int one = 1;
  ::setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  // On the pod's own address (the one the others connect to), so that probes of pods sharing a
  // network namespace (the tests' loopback addresses) do not take each other's port.
  sockaddr_storage sa{};
  socklen_t len = 0;
  if (self_addr) {
    len = self_addr->to_sockaddr(o.port, &sa);
  } else {
    auto* s4 = reinterpret_cast<sockaddr_in*>(&sa);
    s4->sin_family = AF_INET;
    s4->sin_addr.s_addr = htonl(INADDR_ANY);
    s4->sin_port = htons(static_cast<std::uint16_t>(o.port));
    len = sizeof *s4;
  }
  if (::bind(lfd, reinterpret_cast<sockaddr*>(&sa), len) != 0 || ::listen(lfd, 128) != 0) {
    const int e = errno;
    ::close(lfd);
    throw_launch_error(exit_code::kSetupFailed, "the network check cannot listen on port " + std::to_string(o.port) +
                                                    ": " + std::strerror(e) + "; set GJ_PREFLIGHT_PORT to a free port");
  }
  const std::size_t expected = o.incoming;
  std::atomic<std::size_t> done{0};
  std::vector<std::thread> servers;
  std::thread acceptor([&] {
    std::size_t accepted = 0;
    while (accepted < expected && Clock::now() < deadline) {
      pollfd p{lfd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      ++accepted;
      servers.emplace_back(serve, fd, deadline, std::ref(done));
    }
  });
  std::vector<LinkResult> results;
  for (const std::size_t t : o.targets)
    if (t < n) results.push_back(measure(o.self, t, o.addresses[t], o, deadline));
  acceptor.join();
  for (auto& s : servers) s.join();
  ::close(lfd);
  return results;
}

}  // namespace gj
