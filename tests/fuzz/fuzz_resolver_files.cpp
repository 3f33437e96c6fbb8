// The static agent's own name resolution inputs: /etc/hosts, /etc/resolv.conf, the glibc-style
// search expansion and the resolver's host-name check.
// Input: first byte selects (even: /etc/hosts, odd: resolv.conf); the rest is the file. The
// last line of the file doubles as the name to look up / expand.
// Invariants beyond "no crash":
//  - hosts entries: a valid address family, at least one name, names lower case, without
//    blanks, '#' or a trailing dot; lookup_hosts() finds every listed name again, with its
//    address among the results, and returns no address twice;
//  - resolv.conf: 1..3 nameservers, ndots 0..15, timeout 1..30, attempts 1..5, at most 6
//    non-empty blank-free search domains;
//  - query_names(): a name ending in '.' is asked as is (lower case, without the dot);
//    otherwise the name itself plus one name per search domain, each starting with the name;
//  - is_valid_host_name() agrees with the RFC 1123 oracle, so it never accepts what could be an
//    ssh/mpiexec option or shell syntax.
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "host_name.h"
#include "resolver_files.h"

namespace {

bool has_upper_or_blank(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return (c >= 'A' && c <= 'Z') || c == ' ' || c == '\t'; });
}

std::string lower_without_dot(std::string s) {
  if (!s.empty() && s.back() == '.') s.pop_back();
  for (auto& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

void check_hosts(const std::string& text, const std::string& probe) {
  const auto entries = gj::parse_hosts(text);
  for (const auto& e : entries) {
    GJ_FUZZ_CHECK(e.address.family == AF_INET || e.address.family == AF_INET6, text);
    GJ_FUZZ_CHECK(!e.names.empty(), "hosts entry without a name: " + text);
    for (const auto& n : e.names) {
      GJ_FUZZ_CHECK(!has_upper_or_blank(n) && n.find('#') == std::string::npos && n.find('\n') == std::string::npos,
                    "hosts name not normalized: " + n);
      if (n.empty() || n.back() == '.') continue;  // "." alone normalizes to ""; nothing to look up
      const auto found = gj::lookup_hosts(entries, n);
      GJ_FUZZ_CHECK(std::find(found.begin(), found.end(), e.address) != found.end(), "lookup misses " + n);
      for (std::size_t i = 0; i < found.size(); ++i)
        for (std::size_t j = i + 1; j < found.size(); ++j)
          GJ_FUZZ_CHECK(found[i] != found[j], "address returned twice for " + n);
    }
  }
  (void)gj::lookup_hosts(entries, probe);
}

void check_resolv_conf(const std::string& text, const std::string& probe) {
  const auto conf = gj::parse_resolv_conf(text);
  GJ_FUZZ_CHECK(!conf.nameservers.empty() && conf.nameservers.size() <= 3, text);
  GJ_FUZZ_CHECK(conf.ndots >= 0 && conf.ndots <= 15, "ndots " + std::to_string(conf.ndots));
  GJ_FUZZ_CHECK(conf.timeout_s >= 1 && conf.timeout_s <= 30, "timeout " + std::to_string(conf.timeout_s));
  GJ_FUZZ_CHECK(conf.attempts >= 1 && conf.attempts <= 5, "attempts " + std::to_string(conf.attempts));
  GJ_FUZZ_CHECK(conf.search.size() <= 6, text);
  for (const auto& d : conf.search) GJ_FUZZ_CHECK(!d.empty() && !has_upper_or_blank(d), "search domain " + d);

  const auto names = gj::query_names(probe, conf);
  if (probe.empty()) {
    GJ_FUZZ_CHECK(names.empty(), "names for an empty name");
    return;
  }
  const std::string base = lower_without_dot(probe);
  if (probe.back() == '.') {
    GJ_FUZZ_CHECK(names == std::vector<std::string>{base}, "absolute name expanded: " + probe);
    return;
  }
  GJ_FUZZ_CHECK(names.size() == conf.search.size() + 1, "expansion count for " + probe);
  GJ_FUZZ_CHECK(std::count(names.begin(), names.end(), base) >= 1, "name itself never asked: " + probe);
  // (A search domain written with two trailing dots keeps one; encode_dns_query drops it.)
  for (const auto& n : names) GJ_FUZZ_CHECK(n.rfind(base, 0) == 0, "expansion does not start with the name: " + n);
}

void check_host_name(const std::string& name) {
  // One rule for the whole project: the resolver's check is RFC 1123 (the oracle), an absolute
  // name's single trailing dot aside.
  const std::string_view relative =
      !name.empty() && name.back() == '.' ? std::string_view(name).substr(0, name.size() - 1) : std::string_view(name);
  GJ_FUZZ_CHECK(gj::is_valid_host_name(name) == gj::fuzz::is_valid_dns_name(relative),
                "resolver host-name check disagrees with RFC 1123: " + name);
  if (!gj::is_valid_host_name(name)) return;
  GJ_FUZZ_CHECK(name[0] != '-', "option-like host name accepted: " + name);
  GJ_FUZZ_CHECK(name.size() <= 254, "overlong host name accepted");
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '_' || c == '.';
    GJ_FUZZ_CHECK(ok, "host name with a special character accepted: " + name);
  }
  GJ_FUZZ_CHECK(name.find("..") == std::string::npos && name.find(".-") == std::string::npos,
                "empty or option-like label accepted: " + name);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const auto nl = text.find_last_of('\n');
  const std::string probe = nl == std::string::npos ? text : text.substr(nl + 1);
  if ((data[0] & 1) == 0) {
    check_hosts(text, probe);
  } else {
    check_resolv_conf(text, probe);
  }
  check_host_name(probe);
  return 0;
}
