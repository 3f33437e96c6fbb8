#include "dns_message.h"

#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace gj {
namespace {

class Reader {
 public:
  Reader(const std::uint8_t* d, std::size_t n) : d_(d), n_(n) {}
  bool u16(std::size_t& pos, std::uint16_t* v) const {
    if (pos + 2 > n_) return false;
    *v = static_cast<std::uint16_t>((d_[pos] << 8) | d_[pos + 1]);
    pos += 2;
    return true;
  }
  // Reads a (possibly compressed) name starting at pos; pos ends after the name in place.
  bool name(std::size_t& pos, std::string* out) const {
    out->clear();
    std::size_t p = pos;
    bool jumped = false;
    int jumps = 0;
    for (;;) {
      if (p >= n_) return false;
      std::uint8_t len = d_[p];
      if ((len & 0xC0) == 0xC0) {
        if (p + 1 >= n_ || ++jumps > 32) return false;
        std::size_t target = static_cast<std::size_t>(((len & 0x3F) << 8) | d_[p + 1]);
        if (!jumped) pos = p + 2;
        jumped = true;
        p = target;
        continue;
      }
      if ((len & 0xC0) != 0) return false;
      if (len == 0) {
        if (!jumped) pos = p + 1;
        return out->size() <= 255;
      }
      if (p + 1 + len > n_) return false;
      if (!out->empty()) out->push_back('.');
      for (std::size_t i = 0; i < len; ++i) out->push_back(static_cast<char>(std::tolower(d_[p + 1 + i])));
      if (out->size() > 255) return false;
      p += 1 + len;
    }
  }
  std::size_t size() const { return n_; }
  const std::uint8_t* at(std::size_t pos) const { return d_ + pos; }

 private:
  const std::uint8_t* d_;
  std::size_t n_;
};

void put16(std::vector<std::uint8_t>& out, std::uint16_t v) {
  out.push_back(static_cast<std::uint8_t>(v >> 8));
  out.push_back(static_cast<std::uint8_t>(v & 0xFF));
}

}  // namespace

std::vector<std::uint8_t> encode_dns_query(std::uint16_t id, std::string_view name, std::uint16_t qtype) {
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  if (name.empty() || name.size() > 253) return {};
  std::vector<std::uint8_t> out;
  put16(out, id);
  put16(out, 0x0100);  // standard query, recursion desired
  put16(out, 1);       // one question
  put16(out, 0);
  put16(out, 0);
  put16(out, 0);
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('.', start);
    if (end == std::string_view::npos) end = name.size();
    std::size_t len = end - start;
    if (len == 0 || len > 63) return {};
    out.push_back(static_cast<std::uint8_t>(len));
    for (std::size_t i = start; i < end; ++i) out.push_back(static_cast<std::uint8_t>(name[i]));
    start = end + 1;
  }
  out.push_back(0);
  put16(out, qtype);
  put16(out, 1);  // class IN
  return out;
}

std::optional<DnsReply> parse_dns_reply(const std::uint8_t* data, std::size_t size) {
  Reader r(data, size);
  std::size_t pos = 0;
  std::uint16_t id, flags, qd, an, ns, ar;
  if (!r.u16(pos, &id) || !r.u16(pos, &flags) || !r.u16(pos, &qd) || !r.u16(pos, &an) || !r.u16(pos, &ns) ||
      !r.u16(pos, &ar))
    return std::nullopt;
  if ((flags & 0x8000) == 0 || qd != 1) return std::nullopt;  // not a reply, or not ours
  DnsReply reply;
  reply.id = id;
  reply.rcode = flags & 0x000F;
  reply.truncated = (flags & 0x0200) != 0;
  std::uint16_t qclass;
  if (!r.name(pos, &reply.question) || !r.u16(pos, &reply.qtype) || !r.u16(pos, &qclass)) return std::nullopt;
  for (std::uint16_t i = 0; i < an; ++i) {
    std::string owner;
    std::uint16_t type, klass, ttl_hi, ttl_lo, rdlen;
    if (!r.name(pos, &owner) || !r.u16(pos, &type) || !r.u16(pos, &klass) || !r.u16(pos, &ttl_hi) ||
        !r.u16(pos, &ttl_lo) || !r.u16(pos, &rdlen))
      return std::nullopt;
    if (pos + rdlen > r.size()) return std::nullopt;
    if (klass == 1 && ((type == kDnsTypeA && rdlen == 4) || (type == kDnsTypeAAAA && rdlen == 16))) {
      IpAddress ip;
      ip.family = type == kDnsTypeA ? AF_INET : AF_INET6;
      std::memcpy(ip.bytes.data(), r.at(pos), rdlen);
      if (std::find(reply.addresses.begin(), reply.addresses.end(), ip) == reply.addresses.end())
        reply.addresses.push_back(ip);
    }
    pos += rdlen;
  }
  return reply;
}

}  // namespace gj
