// A fake DNS server on 127.0.0.1 (UDP, ephemeral port) for tests: answers A queries for the
// names it knows, NOERROR without records for their AAAA, NXDOMAIN for everything else, and
// records every question ("A name"). Parsing here is deliberately independent of
// dns_message.cpp, so the tests do not check the resolver against itself.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gj::test {

class FakeDns {
 public:
  explicit FakeDns(std::map<std::string, std::string> a_records) : records_(std::move(a_records)) {
    fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    int bytes = 4 << 20;  // a real DNS server absorbs bursts; the default buffer would drop them
    setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeDns() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  FakeDns(const FakeDns&) = delete;
  FakeDns& operator=(const FakeDns&) = delete;

  int port() const { return port_; }
  void add(const std::string& name, const std::string& ip) {
    std::lock_guard<std::mutex> g(mu_);
    records_[name] = ip;
  }
  std::vector<std::string> questions() {
    std::lock_guard<std::mutex> g(mu_);
    return questions_;
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      uint8_t q[512];
      sockaddr_in from{};
      socklen_t from_len = sizeof from;
      ssize_t n = recvfrom(fd_, q, sizeof q, 0, reinterpret_cast<sockaddr*>(&from), &from_len);
      if (n < 17) continue;
      std::string name;
      std::size_t pos = 12;
      while (pos < static_cast<std::size_t>(n) && q[pos] != 0) {
        if (!name.empty()) name += '.';
        name.append(reinterpret_cast<char*>(q + pos + 1), q[pos]);
        pos += 1 + q[pos];
      }
      pos += 1;
      const uint16_t qtype = static_cast<uint16_t>(q[pos] << 8 | q[pos + 1]);
      const std::size_t question_end = pos + 4;
      std::string ip;
      bool known;
      {
        std::lock_guard<std::mutex> g(mu_);
        questions_.push_back((qtype == 1 ? "A " : qtype == 28 ? "AAAA " : "? ") + name);
        auto it = records_.find(name);
        known = it != records_.end();
        if (known) ip = it->second;
      }
      std::vector<uint8_t> r(q, q + question_end);
      r[2] = 0x81;                       // QR, RD
      r[3] = known ? 0x80 : 0x83;        // RA; NOERROR or NXDOMAIN
      r[6] = 0;
      r[7] = (known && qtype == 1) ? 1 : 0;  // one answer for A
      r[8] = r[9] = r[10] = r[11] = 0;
      if (known && qtype == 1) {
        const uint8_t rr[] = {0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 30, 0, 4};
        r.insert(r.end(), rr, rr + sizeof rr);
        in_addr addr{};
        inet_pton(AF_INET, ip.c_str(), &addr);
        auto* b = reinterpret_cast<uint8_t*>(&addr);
        r.insert(r.end(), b, b + 4);
      }
      sendto(fd_, r.data(), r.size(), 0, reinterpret_cast<sockaddr*>(&from), from_len);
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::map<std::string, std::string> records_;
  std::vector<std::string> questions_;
  std::thread thread_;
};

}  // namespace gj::test
