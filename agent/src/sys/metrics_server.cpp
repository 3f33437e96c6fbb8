#include "metrics_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include "internal.h"

namespace gj {
namespace {

void send_all(int fd, const std::string& text) {
  std::size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::send(fd, text.data() + off, text.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, 2000) == 1) continue;
    }
    return;
  }
}

std::string response(int code, const char* reason, const char* type, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(code) + " " + reason + "\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

}  // namespace

struct MetricsServer::State {
  int listen_fd = -1;
  int wake[2] = {-1, -1};
  int port = 0;
  std::function<std::string()> render;
  std::thread thread;

  // One request: its first line decides; the rest of the headers are read and ignored.
  void serve(int fd) {
    std::string in;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (in.find("\r\n\r\n") == std::string::npos && in.find("\n\n") == std::string::npos && in.size() < 8192) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (left.count() <= 0) return;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) != 1) return;
      char buf[2048];
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return;
      in.append(buf, static_cast<std::size_t>(n));
    }
    const std::string first = in.substr(0, in.find_first_of("\r\n"));
    if (first.compare(0, 13, "GET /metrics ") == 0 || first == "GET /metrics" || first.compare(0, 14, "GET /metrics?") == 0)
      send_all(fd, response(200, "OK", "text/plain; version=0.0.4; charset=utf-8", render()));
    else
      send_all(fd, response(404, "Not Found", "text/plain", "gj-mpirun serves /metrics only\n"));
  }

  void loop() {
    for (;;) {
      pollfd fds[2] = {{wake[0], POLLIN, 0}, {listen_fd, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
      if (fds[0].revents != 0) return;
      if (fds[1].revents & POLLIN) {
        const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        serve(fd);
        ::close(fd);
      }
    }
  }
};

MetricsServer::MetricsServer(int port, std::function<std::string()> render) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.render = std::move(render);
  s.listen_fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  bool v6 = s.listen_fd >= 0;
  if (!v6) s.listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s.listen_fd < 0) throw_syscall_error("socket (the metrics endpoint)", errno);
  int one = 1;
  ::setsockopt(s.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_storage addr{};
  socklen_t len = 0;
  if (v6) {
    int off = 0;
    ::setsockopt(s.listen_fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&addr);
    a6->sin6_family = AF_INET6;
    a6->sin6_addr = in6addr_any;
    a6->sin6_port = htons(static_cast<std::uint16_t>(port));
    len = sizeof *a6;
  } else {
    auto* a4 = reinterpret_cast<sockaddr_in*>(&addr);
    a4->sin_family = AF_INET;
    a4->sin_addr.s_addr = htonl(INADDR_ANY);
    a4->sin_port = htons(static_cast<std::uint16_t>(port));
    len = sizeof *a4;
  }
  if (::bind(s.listen_fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(s.listen_fd, 64) != 0) {
    const int e = errno;
    ::close(s.listen_fd);
    throw_syscall_error("bind (the metrics endpoint on port " + std::to_string(port) + ")", e,
                        "set --metrics-port/GJ_METRICS_PORT to a free port, or 0 for none");
  }
  sockaddr_storage bound{};
  socklen_t blen = sizeof bound;
  ::getsockname(s.listen_fd, reinterpret_cast<sockaddr*>(&bound), &blen);
  s.port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  if (::pipe2(s.wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    const int e = errno;
    ::close(s.listen_fd);
    throw_syscall_error("pipe2 (the metrics endpoint)", e);
  }
  s.thread = std::thread([&s] { s.loop(); });
}

MetricsServer::~MetricsServer() {
  State& s = *state_;
  ssize_t n = ::write(s.wake[1], "x", 1);
  (void)n;
  if (s.thread.joinable()) s.thread.join();
  for (int fd : {s.listen_fd, s.wake[0], s.wake[1]})
    if (fd >= 0) ::close(fd);
}

int MetricsServer::port() const { return state_->port; }

}  // namespace gj
