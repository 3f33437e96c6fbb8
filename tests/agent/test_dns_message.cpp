// DNS query encoding and reply parsing (pure), with hand-assembled packets.
#include <catch2/catch.hpp>

#include "dns_message.h"

namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes header(std::uint16_t id, std::uint16_t flags, std::uint16_t qd, std::uint16_t an) {
  return {static_cast<std::uint8_t>(id >> 8), static_cast<std::uint8_t>(id), static_cast<std::uint8_t>(flags >> 8),
          static_cast<std::uint8_t>(flags), 0, static_cast<std::uint8_t>(qd), 0, static_cast<std::uint8_t>(an),
          0, 0, 0, 0};
}

Bytes operator+(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// w0.job, type, class IN
Bytes question(std::uint8_t type) { return {2, 'w', '0', 3, 'j', 'o', 'b', 0, 0, type, 0, 1}; }

Bytes a_record(Bytes owner, std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
  return owner + Bytes{0, 1, 0, 1, 0, 0, 0, 60, 0, 4, a, b, c, d};
}

std::vector<std::string> strings(const std::vector<gj::IpAddress>& ips) {
  std::vector<std::string> out;
  for (const auto& ip : ips) out.push_back(ip.to_string());
  return out;
}

}  // namespace

TEST_CASE("DNS query encoding") {
  auto q = gj::encode_dns_query(0xBEEF, "w0.job.", gj::kDnsTypeAAAA);
  CHECK(q == header(0xBEEF, 0x0100, 1, 0) + Bytes{2, 'w', '0', 3, 'j', 'o', 'b', 0, 0, 28, 0, 1});
  CHECK(gj::encode_dns_query(1, "", gj::kDnsTypeA).empty());
  CHECK(gj::encode_dns_query(1, "a..b", gj::kDnsTypeA).empty());
  CHECK(gj::encode_dns_query(1, std::string(64, 'a'), gj::kDnsTypeA).empty());
  CHECK_FALSE(gj::encode_dns_query(1, std::string(63, 'a'), gj::kDnsTypeA).empty());
}

TEST_CASE("DNS reply parsing: answers - compression - CNAME chains - rcodes") {
  // Answer owner as a compression pointer to the question (offset 12).
  auto pkt = header(7, 0x8180, 1, 2) + question(1) + a_record({0xC0, 12}, 10, 0, 0, 1) +
             a_record({0xC0, 12}, 10, 0, 0, 2);
  auto r = gj::parse_dns_reply(pkt.data(), pkt.size());
  REQUIRE(r);
  CHECK(r->id == 7);
  CHECK(r->rcode == 0);
  CHECK(r->question == "w0.job");
  CHECK(r->qtype == 1);
  CHECK(strings(r->addresses) == std::vector<std::string>{"10.0.0.1", "10.0.0.2"});

  // CNAME first (type 5), then the A record of the target.
  Bytes cname = Bytes{0xC0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 4, 1, 'x', 0xC0, 15};
  pkt = header(8, 0x8180, 1, 2) + question(1) + cname + a_record({1, 'x', 0xC0, 15}, 10, 0, 0, 3);
  r = gj::parse_dns_reply(pkt.data(), pkt.size());
  REQUIRE(r);
  CHECK(strings(r->addresses) == std::vector<std::string>{"10.0.0.3"});

  // AAAA.
  pkt = header(9, 0x8180, 1, 1) + question(28) +
        Bytes{0xC0, 12, 0, 28, 0, 1, 0, 0, 0, 60, 0, 16, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5};
  r = gj::parse_dns_reply(pkt.data(), pkt.size());
  REQUIRE(r);
  CHECK(strings(r->addresses) == std::vector<std::string>{"fd00::5"});

  // NXDOMAIN, SERVFAIL, truncation.
  for (auto [flags, rcode, tc] : {std::tuple{0x8183, 3, false}, std::tuple{0x8182, 2, false}, std::tuple{0x8380, 0, true}}) {
    pkt = header(10, static_cast<std::uint16_t>(flags), 1, 0) + question(1);
    r = gj::parse_dns_reply(pkt.data(), pkt.size());
    REQUIRE(r);
    CHECK(r->rcode == rcode);
    CHECK(r->truncated == tc);
    CHECK(r->addresses.empty());
  }
}

TEST_CASE("DNS reply parsing rejects malformed packets") {
  const Bytes good = header(7, 0x8180, 1, 1) + question(1) + a_record({0xC0, 12}, 10, 0, 0, 1);
  struct Row {
    std::string what;
    Bytes pkt;
  };
  auto row = GENERATE_COPY(
      Row{"empty", {}}, Row{"short header", Bytes(good.begin(), good.begin() + 11)},
      Row{"a query, not a reply", header(7, 0x0100, 1, 0) + question(1)},
      Row{"two questions", header(7, 0x8180, 2, 0) + question(1) + question(1)},
      Row{"truncated answer", Bytes(good.begin(), good.end() - 2)},
      Row{"pointer loop", header(7, 0x8180, 1, 0) + Bytes{0xC0, 12}},
      Row{"pointer past the end", header(7, 0x8180, 1, 0) + Bytes{0xC0, 200, 0, 1, 0, 1}},
      Row{"label past the end", header(7, 0x8180, 1, 0) + Bytes{40, 'a', 'b'}},
      Row{"reserved label type", header(7, 0x8180, 1, 0) + Bytes{0x80, 'a', 0, 0, 1, 0, 1}},
      Row{"rdlength past the end", header(7, 0x8180, 1, 1) + question(1) + Bytes{0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 40, 1}});
  CAPTURE(row.what);
  CHECK_FALSE(gj::parse_dns_reply(row.pkt.data(), row.pkt.size()));
}

TEST_CASE("DNS reply parsing ignores records of other classes and odd lengths") {
  auto pkt = header(7, 0x8180, 1, 2) + question(1) + Bytes{0xC0, 12, 0, 1, 0, 3, 0, 0, 0, 60, 0, 4, 1, 2, 3, 4} +
             Bytes{0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 3, 1, 2, 3};
  auto r = gj::parse_dns_reply(pkt.data(), pkt.size());
  REQUIRE(r);
  CHECK(r->addresses.empty());
}
