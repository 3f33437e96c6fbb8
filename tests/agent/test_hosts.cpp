#include <catch2/catch.hpp>

#include "exit_codes.h"
#include "hosts.h"
#include "test_support.h"

using namespace gj;
using Hosts = std::vector<std::string>;

TEST_CASE("MPI_HOST: comma-separated, empty fields ignored, order kept", "[hosts]") {
  const std::pair<const char*, Hosts> cases[] = {
      {"", {}},
      {",", {}},
      {"a.job", {"a.job"}},
      {"job-worker-0.job,job-worker-1.job", {"job-worker-0.job", "job-worker-1.job"}},
      {",b.job,,a.job,", {"b.job", "a.job"}},
      {"W-1.Job-2", {"W-1.Job-2"}},
  };
  for (const auto& [text, want] : cases) {
    INFO('"' << text << '"');
    const HostList got = parse_host_list("MPI_HOST", text);
    CHECK(got.hosts == want);
    CHECK(got.origin == "MPI_HOST");
  }
}

TEST_CASE("MPI_HOST entries that are not DNS names", "[hosts]") {
  const std::pair<const char*, const char*> cases[] = {
      {"a.job,bad host", "entry 2 \"bad host\" is not a valid DNS host name (contains a space"},
      {"a;rm -rf /", "contains ';'"},
      {"a.job:4", "contains ':'"},
      {"-oProxyCommand=x", "a label starts with '-'"},
      {"a.-b", "a label starts with '-'"},
      {"a-.b", "a label ends with '-'"},
      {"a..b", "empty label"},
      {"a.b.", "empty label"},
      {"$(reboot)", "contains '$'"},
      {"a`b`", "contains '`'"},
      {"a|b", "contains '|'"},
      {"a_b", "contains '_'"},
      {"a\tb", "contains a tab"},
  };
  for (const auto& c : cases) {
    const char* const text = c.first;  // not a structured binding: lambdas cannot capture one in C++17
    INFO(text);
    test::require_agent_error([&] { parse_host_list("MPI_HOST", text); }, exit_code::kBadEnvironment, c.second);
  }
  test::require_agent_error([] { parse_host_list("MPI_HOST", std::string(64, 'a')); }, exit_code::kBadEnvironment,
                            "longer than 63");
  std::string long_name;
  for (int i = 0; i < 64; ++i) long_name += "abc.";
  long_name += "x";
  test::require_agent_error([&] { parse_host_list("MPI_HOST", long_name); }, exit_code::kBadEnvironment,
                            "longer than 253");
}

TEST_CASE("a host error is one line whatever the entry holds (F2)", "[hosts][security]") {
  const std::pair<std::string, std::string> cases[] = {
      {"a.job,b\nERROR forged", "entry 2 \"b\\nERROR forged\" is not"},
      {"a\r.job", "entry 1 \"a\\r.job\" is not"},
      {"x" + std::string(5000, 'y') + "\n", "... (5002 bytes) is not"},
  };
  for (const auto& c : cases) {
    INFO(c.first);
    try {
      parse_host_list("MPI_HOST", c.first);
      FAIL("expected AgentError");
    } catch (const AgentError& e) {
      CHECK_THAT(e.message, Catch::Contains(c.second));
      CHECK(e.message.find_first_of("\r\n") == std::string::npos);
      CHECK(e.message.size() < 400);
    }
  }
}

TEST_CASE("duplicate hosts name both positions", "[hosts]") {
  test::require_agent_error([] { parse_host_list("MPI_HOST", "a.job,b.job,,a.job"); }, exit_code::kBadEnvironment,
                            "MPI_HOST lists \"a.job\" twice (entry 1 and entry 4)");
  test::require_agent_error([] { parse_hosts_file("hosts file f", "a\nb\na\n"); }, exit_code::kBadEnvironment,
                            "hosts file f lists \"a\" twice (line 1 and line 3)");
}

TEST_CASE("host files: one per line, blanks/comments/CR skipped", "[hosts]") {
  const HostList got = parse_hosts_file("hosts file /etc/volcano/worker.host",
                                        "job-worker-0.job\r\n\n  job-worker-1.job  \n# comment\njob-worker-2.job");
  CHECK(got.hosts == Hosts{"job-worker-0.job", "job-worker-1.job", "job-worker-2.job"});
  test::require_agent_error([] { parse_hosts_file("hosts file f", "a\nb c\n"); }, exit_code::kBadEnvironment,
                            "hosts file f line 2 \"b c\" is not a valid DNS host name");
}

TEST_CASE("10,000 hosts parse quickly", "[hosts]") {
  std::string text;
  for (int i = 0; i < 10000; ++i) text += "job-worker-" + std::to_string(i) + ".job\n";
  const HostList got = parse_hosts_file("f", text);
  REQUIRE(got.hosts.size() == 10000);
  CHECK(got.hosts[9999] == "job-worker-9999.job");
}
