// Loopback helpers for the readiness tests: listeners on 127.0.0.0/8 addresses, a free port,
// and files replaced atomically (as Kubernetes updates /etc/hosts).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

namespace gj::test {

inline sockaddr_in loopback_address(const std::string& ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) throw std::runtime_error("bad address " + ip);
  return a;
}

// A listening TCP socket on ip:port (port 0: any); closes on destruction.
class Listener {
 public:
  Listener(const std::string& ip, int port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a = loopback_address(ip, port);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd_, 4096) != 0)
      throw std::runtime_error("cannot listen on " + ip + ":" + std::to_string(port));
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~Listener() {
    if (fd_ >= 0) close(fd_);
  }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  int port() const { return port_; }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A TCP port nothing listens on right now (on 127.0.0.1; we use the same port on 127.x.y.z).
inline int free_port() { return Listener("127.0.0.1", 0).port(); }

inline void replace_file(const std::string& path, const std::string& text) {
  {
    std::ofstream out(path + ".new");
    out << text;
  }
  std::rename((path + ".new").c_str(), path.c_str());
}

}  // namespace gj::test
