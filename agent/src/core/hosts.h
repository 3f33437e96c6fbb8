// Worker host lists: MPI_HOST ("a.job,b.job", empty fields ignored) and host files
// (/etc/volcano/worker.host: one host per line) -> validated names in their order.
#pragma once

#include <string>
#include <vector>

#include "host_name.h"  // dns_name_problem: the rule every host passes

namespace gj {

// Where a host list came from, for messages: "MPI_HOST" or "hosts file /etc/volcano/worker.host".
struct HostList {
  std::string origin;
  std::vector<std::string> hosts;
};

// Validates (dns_name_problem) and rejects duplicates, ignoring case; names[i] is `unit` number
// position[i] in messages ("entry 3", "line 3"). Throws AgentError (kBadEnvironment).
HostList validate_hosts(const std::string& origin, std::vector<std::string> names,
                        const std::vector<std::size_t>& position, const char* unit);

// Comma-separated, empty fields skipped. Throws AgentError (kBadEnvironment) for invalid or
// duplicate names, naming the entry's position.
HostList parse_host_list(const std::string& origin, const std::string& text);

// One host per line; blank lines and lines starting with '#' skipped; surrounding blanks and
// '\r' trimmed. Same validation as parse_host_list, naming the line.
HostList parse_hosts_file(const std::string& origin, const std::string& text);

}  // namespace gj
