// Pure parsers for /etc/hosts and /etc/resolv.conf, and the search-list expansion glibc applies
// (the agent is static: glibc's NSS is not available to it, so it resolves names itself).
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ip_address.h"

namespace gj {

struct HostsEntry {
  IpAddress address;
  std::vector<std::string> names;  // canonical name first, then aliases; lower case
};

// Lines "ADDRESS NAME [ALIAS...]"; '#' starts a comment; malformed lines are skipped.
std::vector<HostsEntry> parse_hosts(std::string_view text);

// Every address listed for name (case-insensitive, a trailing dot ignored), in file order.
std::vector<IpAddress> lookup_hosts(const std::vector<HostsEntry>& entries, std::string_view name);

// The same lookups for many names: name (lower case) -> addresses in file order.
using HostsIndex = std::unordered_map<std::string, std::vector<IpAddress>>;
HostsIndex index_hosts(const std::vector<HostsEntry>& entries);
std::vector<IpAddress> lookup_hosts(const HostsIndex& index, std::string_view name);

struct ResolvConf {
  std::vector<IpAddress> nameservers;  // at most 3, as glibc; none given means 127.0.0.1
  std::vector<std::string> search;     // the last `search` or `domain` line wins
  int ndots = 1;                       // options ndots:N (glibc caps it at 15)
  int timeout_s = 5;                   // options timeout:N (glibc caps it at 30)
  int attempts = 2;                    // options attempts:N (glibc caps it at 5)
};

ResolvConf parse_resolv_conf(std::string_view text);

// The fully qualified names to ask for, in order (glibc's res_nsearch): a name ending in '.'
// as is; a name with at least ndots dots as is first, then with each search domain; a shorter
// name with each search domain first, then as is. Names are lower-cased, without trailing dot.
std::vector<std::string> query_names(std::string_view name, const ResolvConf& conf);

}  // namespace gj
