#include "ip_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

namespace gj {

std::string IpAddress::to_string() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (family != AF_INET && family != AF_INET6) return "?";
  ::inet_ntop(family, bytes.data(), buf, sizeof buf);
  return buf;
}

unsigned IpAddress::to_sockaddr(int port, sockaddr_storage* out) const {
  std::memset(out, 0, sizeof *out);
  if (family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(out);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<std::uint16_t>(port));
    std::memcpy(&a->sin_addr, bytes.data(), 4);
    return sizeof(sockaddr_in);
  }
  auto* a = reinterpret_cast<sockaddr_in6*>(out);
  a->sin6_family = AF_INET6;
  a->sin6_port = htons(static_cast<std::uint16_t>(port));
  std::memcpy(&a->sin6_addr, bytes.data(), 16);
  return sizeof(sockaddr_in6);
}

std::optional<IpAddress> parse_ip(std::string_view text) {
  if (text.empty() || text.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  std::string s(text);
  IpAddress ip;
  if (::inet_pton(AF_INET, s.c_str(), ip.bytes.data()) == 1) {
    ip.family = AF_INET;
    return ip;
  }
  if (::inet_pton(AF_INET6, s.c_str(), ip.bytes.data()) == 1) {
    ip.family = AF_INET6;
    return ip;
  }
  return std::nullopt;
}

std::optional<IpAddress> from_sockaddr(const sockaddr_storage& sa) {
  IpAddress ip;
  if (sa.ss_family == AF_INET) {
    ip.family = AF_INET;
    std::memcpy(ip.bytes.data(), &reinterpret_cast<const sockaddr_in&>(sa).sin_addr, 4);
    return ip;
  }
  if (sa.ss_family == AF_INET6) {
    ip.family = AF_INET6;
    std::memcpy(ip.bytes.data(), &reinterpret_cast<const sockaddr_in6&>(sa).sin6_addr, 16);
    return ip;
  }
  return std::nullopt;
}

int port_of(const sockaddr_storage& sa) {
  if (sa.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(sa).sin_port);
  if (sa.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(sa).sin6_port);
  return 0;
}

}  // namespace gj
