// DNS messages: the static agent's stub resolver parses replies from the network, so the
// parser must hold against any datagram.
// Input: first byte selects
//   even: the rest is a reply datagram, parsed as is (libFuzzer hands it over in a buffer of
//         exactly that size, so ASan flags any read past its end);
//   odd:  the rest is a host name; its encoded query, turned into a reply by setting QR, must
//         parse back to the same question.
// Invariants beyond "no crash / no out-of-bounds read":
//  - a parsed reply has the QR bit, the datagram's id, rcode and TC bit, a lower-case question
//    of at most 255 bytes, A/AAAA addresses only, none twice, and every address's bytes occur
//    in the datagram (nothing read from outside it);
//  - encode_dns_query() output is well formed (header, one question, labels of 1..63, a root
//    label) and round-trips.
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "dns_message.h"
#include "fuzz_check.h"

namespace {

bool occurs_in(const uint8_t* data, size_t size, const uint8_t* needle, size_t n) {
  if (n > size) return false;
  for (size_t i = 0; i + n <= size; ++i)
    if (std::memcmp(data + i, needle, n) == 0) return true;
  return false;
}

void check_reply(const uint8_t* data, size_t size) {
  const auto reply = gj::parse_dns_reply(data, size);
  if (!reply) return;
  GJ_FUZZ_CHECK(size >= 12 && (data[2] & 0x80) != 0, "parsed a datagram that is not a reply");
  GJ_FUZZ_CHECK(reply->id == ((data[0] << 8) | data[1]), "id");
  GJ_FUZZ_CHECK(reply->rcode == (data[3] & 0x0F), "rcode");
  GJ_FUZZ_CHECK(reply->truncated == ((data[2] & 0x02) != 0), "TC bit");
  GJ_FUZZ_CHECK(reply->question.size() <= 255, "question longer than 255");
  for (const char c : reply->question) GJ_FUZZ_CHECK(!(c >= 'A' && c <= 'Z'), "question not lower case");
  for (std::size_t i = 0; i < reply->addresses.size(); ++i) {
    const auto& a = reply->addresses[i];
    GJ_FUZZ_CHECK(a.family == AF_INET || a.family == AF_INET6, "address family");
    const size_t n = a.family == AF_INET ? 4 : 16;
    GJ_FUZZ_CHECK(occurs_in(data, size, a.bytes.data(), n), "address bytes not from the datagram");
    for (std::size_t j = i + 1; j < reply->addresses.size(); ++j)
      GJ_FUZZ_CHECK(reply->addresses[j] != a, "address twice");
  }
}

void check_round_trip(const std::string& name, uint16_t id) {
  for (const uint16_t qtype : {gj::kDnsTypeA, gj::kDnsTypeAAAA}) {
    auto q = gj::encode_dns_query(id, name, qtype);
    if (q.empty()) continue;
    GJ_FUZZ_CHECK(q.size() >= 12 + 1 + 4 && q[4] == 0 && q[5] == 1, "query header: " + name);
    GJ_FUZZ_CHECK(q.size() <= 12 + 255 + 4, "query name over 255 bytes: " + name);
    std::size_t p = 12;
    while (q[p] != 0) {
      GJ_FUZZ_CHECK(q[p] <= 63, "label over 63: " + name);
      p += 1 + q[p];
      GJ_FUZZ_CHECK(p < q.size(), "label runs past the query: " + name);
    }
    GJ_FUZZ_CHECK(p + 5 == q.size(), "bytes after the question: " + name);
    q[2] |= 0x80;  // the server's reply echoes the question with QR set
    const auto reply = gj::parse_dns_reply(q.data(), q.size());
    GJ_FUZZ_CHECK(reply.has_value(), "own query does not parse as a reply: " + name);
    std::string want = name;
    if (!want.empty() && want.back() == '.') want.pop_back();
    for (auto& c : want)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    GJ_FUZZ_CHECK(reply->question == want && reply->qtype == qtype && reply->id == id && reply->addresses.empty(),
                  "round trip changed the question: " + name);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if ((data[0] & 1) == 0) {
    // Copy to an exact-size heap block: the parser may only read [data+1, data+size).
    std::vector<uint8_t> datagram(data + 1, data + size);
    check_reply(datagram.data(), datagram.size());
  } else {
    check_round_trip(std::string(reinterpret_cast<const char*>(data) + 1, size - 1),
                     static_cast<uint16_t>(size * 2654435761u));
  }
  return 0;
}
