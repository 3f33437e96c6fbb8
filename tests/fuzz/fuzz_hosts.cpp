// Host-list parser: MPI_HOST strings and host files (/etc/volcano/worker.host).
// Input: first byte selects the parser (even: MPI_HOST, odd: hosts file), the rest is the text
// as the platform would write it (raw bytes, no escapes).
// Invariants beyond "no crash":
//  - the agent's dns_name_problem() agrees with the independent oracle on every field;
//  - every accepted host is a valid DNS name (so it can never start with '-' or carry shell
//    syntax) and appears once;
//  - acceptance is exact: the hosts are the non-empty comma fields (MPI_HOST) or the trimmed,
//    non-blank, non-comment lines (hosts file), in their order; rejection happens exactly when
//    one of those is invalid or repeated;
//  - a rejection is an AgentError with the environment exit code and a one-line message.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "agent_error.h"
#include "exit_codes.h"
#include "fuzz_check.h"
#include "hosts.h"

namespace {

using gj::fuzz::is_valid_dns_name;

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const auto end = text.find(sep, start);
    out.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

std::string trim(const std::string& s) {
  const char* ws = " \t\r\n";
  const auto b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// What the parser must return, derived from the format description alone.
std::vector<std::string> expected_entries(const std::string& text, bool hosts_file) {
  std::vector<std::string> out;
  if (hosts_file) {
    for (const auto& line : split(text, '\n')) {
      const auto t = trim(line);
      if (!t.empty() && t[0] != '#') out.push_back(t);
    }
  } else {
    for (const auto& field : split(text, ',')) {
      if (!field.empty()) out.push_back(field);
    }
  }
  return out;
}

void check_one_line_error(const gj::AgentError& e, const std::string& input) {
  GJ_FUZZ_CHECK(e.exit_code == gj::exit_code::kBadEnvironment, "exit code " + std::to_string(e.exit_code) + " for " + input);
  GJ_FUZZ_CHECK(!e.message.empty(), input);
  GJ_FUZZ_CHECK(e.message.find_first_of("\n\r") == std::string::npos, "multi-line error: " + e.message);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool hosts_file = (data[0] & 1) != 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const auto entries = expected_entries(text, hosts_file);

  bool all_valid = true;
  std::set<std::string> distinct;
  for (const auto& name : entries) {
    const bool oracle = is_valid_dns_name(name);
    const bool agent = gj::dns_name_problem(name).empty();
    GJ_FUZZ_CHECK(oracle == agent, std::string("dns_name_problem disagrees with RFC 1123 oracle on ") + name);
    all_valid = all_valid && oracle;
    // DNS names are case-insensitive: "a" and "A" name one pod.
    std::string folded = name;
    for (char& c : folded) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    distinct.insert(folded);
  }
  const bool should_accept = all_valid && distinct.size() == entries.size();

  try {
    const auto list = hosts_file ? gj::parse_hosts_file("hosts file /fuzz", text) : gj::parse_host_list("MPI_HOST", text);
    GJ_FUZZ_CHECK(should_accept, "accepted an invalid or duplicate host list: " + text);
    GJ_FUZZ_CHECK(list.hosts == entries, "accepted hosts differ from the input's entries: " + text);
    for (const auto& h : list.hosts) {
      GJ_FUZZ_CHECK(is_valid_dns_name(h), h);
      GJ_FUZZ_CHECK(h[0] != '-', h);
    }
  } catch (const gj::AgentError& e) {
    GJ_FUZZ_CHECK(!should_accept, "rejected a valid host list (" + e.message + "): " + text);
    check_one_line_error(e, text);
  }
  return 0;
}
