#include "text.h"
#include "hosts.h"

#include <unordered_map>

#include "agent_error.h"
#include "quote.h"
#include "exit_codes.h"

namespace gj {
namespace {

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

}  // namespace

HostList validate_hosts(const std::string& origin, std::vector<std::string> names,
                        const std::vector<std::size_t>& position, const char* unit) {
  const auto where = [&](std::size_t i) { return std::string(unit) + " " + std::to_string(position[i]); };
  std::unordered_map<std::string, std::size_t> seen;
  seen.reserve(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string problem = dns_name_problem(names[i]);
    if (!problem.empty())
      throw AgentError{exit_code::kBadEnvironment, origin + " " + where(i) + " " + quoted_value(names[i]) +
                                                       " is not a valid DNS host name (" + problem +
                                                       "); list worker host names only, without ports or slots"};
    // DNS names are case-insensitive: JOB-WORKER-0.JOB and job-worker-0.job are one pod.
    const auto [it, inserted] = seen.emplace(lower(names[i]), i);
    if (!inserted)
      throw AgentError{exit_code::kBadEnvironment, origin + " lists " + quoted_value(names[i]) + " twice (" +
                                                       where(it->second) + " and " + where(i) +
                                                       "); each worker pod must appear once"};
  }
  return HostList{origin, std::move(names)};
}

HostList parse_host_list(const std::string& origin, const std::string& text) {
  std::vector<std::string> names;
  std::vector<std::size_t> where;
  std::size_t field = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    ++field;
    if (end > start) {
      names.push_back(text.substr(start, end - start));
      where.push_back(field);
    }
    start = end + 1;
  }
  return validate_hosts(origin, std::move(names), where, "entry");
}

HostList parse_hosts_file(const std::string& origin, const std::string& text) {
  std::vector<std::string> names;
  std::vector<std::size_t> where;
  std::size_t line_no = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    ++line_no;
    const std::string line = trim(text.substr(start, end - start));
    if (!line.empty() && line[0] != '#') {
      names.push_back(line);
      where.push_back(line_no);
    }
    start = end + 1;
  }
  return validate_hosts(origin, std::move(names), where, "line");
}

}  // namespace gj
