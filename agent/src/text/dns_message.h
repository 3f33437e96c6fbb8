// Pure encoding of DNS queries and decoding of replies (RFC 1035), just what an A/AAAA stub
// resolver needs. Every length and pointer in a reply is bounds-checked.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ip_address.h"

namespace gj {

inline constexpr std::uint16_t kDnsTypeA = 1;
inline constexpr std::uint16_t kDnsTypeAAAA = 28;
inline constexpr int kDnsRcodeNoError = 0;
inline constexpr int kDnsRcodeServFail = 2;
inline constexpr int kDnsRcodeNxDomain = 3;

// A recursive query for name (no trailing dot) and qtype; empty when name is not encodable.
std::vector<std::uint8_t> encode_dns_query(std::uint16_t id, std::string_view name, std::uint16_t qtype);

struct DnsReply {
  std::uint16_t id = 0;
  int rcode = 0;
  bool truncated = false;
  std::string question;  // lower case, no trailing dot
  std::uint16_t qtype = 0;
  std::vector<IpAddress> addresses;  // A and AAAA records of the answer section (IN class)
};

// nullopt when the message is not a well-formed reply with exactly one question.
std::optional<DnsReply> parse_dns_reply(const std::uint8_t* data, std::size_t size);

}  // namespace gj
