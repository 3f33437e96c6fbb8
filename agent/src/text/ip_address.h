// An IPv4 or IPv6 address as the resolver and the readiness gate pass it around.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

struct sockaddr_storage;

namespace gj {

struct IpAddress {
  int family = 0;  // AF_INET or AF_INET6
  std::array<std::uint8_t, 16> bytes{};  // 4 used for AF_INET

  std::string to_string() const;
  // Fills `out` with this address and `port`; returns the length to pass to connect/sendto.
  unsigned to_sockaddr(int port, sockaddr_storage* out) const;
  bool operator==(const IpAddress& o) const { return family == o.family && bytes == o.bytes; }
  bool operator!=(const IpAddress& o) const { return !(*this == o); }
};

// A literal "10.0.0.3" or "fd00::3" (no brackets, no zone); nullopt for anything else.
std::optional<IpAddress> parse_ip(std::string_view text);
// From a sockaddr received from the kernel (AF_INET/AF_INET6); nullopt for other families.
std::optional<IpAddress> from_sockaddr(const sockaddr_storage& sa);
int port_of(const sockaddr_storage& sa);

}  // namespace gj
