#include <catch2/catch.hpp>

#include "exit_codes.h"
#include "test_support.h"
#include "settings.h"
#include "value_parsers.h"

using namespace gj;

TEST_CASE("parse_count accepts whole numbers", "[values]") {
  const std::pair<const char*, std::int64_t> cases[] = {
      {"0", 0}, {"1", 1}, {"8", 8}, {"007", 7}, {"9223372036854775807", INT64_MAX}};
  for (const auto& [text, want] : cases) {
    INFO(text);
    CHECK(parse_count("V", text) == want);
  }
}

TEST_CASE("parse_count rejects bad values naming variable and value", "[values]") {
  const std::pair<const char*, const char*> cases[] = {
      {"", "is empty"},
      {"-1", "is negative"},
      {"two", "is not a non-negative integer"},
      {"4.0", "is not a non-negative integer"},
      {"1e3", "is not a non-negative integer"},
      {" 4", "is not a non-negative integer"},
      {"+4", "is not a non-negative integer"},
      {"9223372036854775808", "is too large (overflows"},
      {"99999999999999999999999", "is too large (overflows"},
  };
  // Members, not a structured binding: C++17 does not let a lambda capture a binding (clang rejects it).
  for (const auto& c : cases) {
    const char* const text = c.first;
    const char* const why = c.second;
    INFO(text);
    test::require_agent_error([&] { parse_count("GJ_X", text); }, exit_code::kBadEnvironment,
                              std::string("GJ_X=\"") + text + "\" " + why);
  }
}

TEST_CASE("parse_cpu_quantity floors Kubernetes quantities", "[values]") {
  const std::pair<const char*, std::int64_t> cases[] = {
      {"4", 4}, {"2.5", 2}, {"4000m", 4}, {"4500m", 4}, {"500m", 0}, {"0.9", 0}, {"16", 16}, {"1.", 1}, {".5", 0},
      // The rest of the grammar the API server accepts: sign, exponents, SI suffixes.
      {"+4", 4}, {"1e3", 1000}, {"4e-1", 0}, {"1k", 1000}, {"4k", 4000}, {"2Ki", 2048}, {"1.5k", 1500},
      {"2E-0", 2}, {"0.5Ki", 512}, {"8000000u", 8}, {"3000000000n", 3}, {"-0", 0}, {"007", 7}, {"1.25e1", 12}};
  for (const auto& [text, want] : cases) {
    INFO(text);
    CHECK(parse_cpu_quantity("V", text) == want);
  }
}

TEST_CASE("parse_cpu_quantity is exact however many digits a small value has", "[values]") {
  const std::string nines(40, '9');
  const std::string ones(33, '1');
  const std::pair<std::string, std::int64_t> cases[] = {
      {"0." + nines, 0},                // was "overflows a 64-bit integer"
      {ones + "e-30", 111},             // 111.111...
      {ones + "e-32", 1},
      {"0." + nines + "Ki", 1023},      // 1023.999...: floored, not rounded
      {"0." + nines + "e1", 9},
      {std::string(50, '0') + "4", 4},  // leading zeros carry nothing
      {"9223372036854775807", 9223372036854775807},
      {"0.000000000000000000000000000000000000001Ei", 0},
      {"1" + std::string(40, '0') + "e-40", 1},
  };
  for (const auto& [text, want] : cases) {
    INFO(text);
    CHECK(parse_cpu_quantity("V", text) == want);
  }
  test::require_agent_error([] { parse_cpu_quantity("V", "9223372036854775808"); }, exit_code::kBadEnvironment,
                            "overflows");
  test::require_agent_error([] { parse_cpu_quantity("V", "1" + std::string(40, '0') + "e-20"); },
                            exit_code::kBadEnvironment, "overflows");
}

TEST_CASE("parse_cpu_quantity rejects non-quantities", "[values]") {
  const std::pair<const char*, const char*> cases[] = {
      {"", "is empty"},           {"-2", "is negative"},         {"four", "is not a CPU quantity"},
      {"4x", "is not a CPU quantity"}, {"m", "is not a CPU quantity"}, {".", "is not a CPU quantity"},
      {"1e", "is not a CPU quantity"}, {"1K", "is not a CPU quantity"}, {"1ki", "is not a CPU quantity"},
      {"-1k", "is negative"}, {"1e30", "overflows"}, {"9Ei", "overflows"},
      {"1.2.3", "is not a CPU quantity"}, {"99999999999999999999", "overflows"},
  };
  for (const auto& c : cases) {
    const char* const text = c.first;
    const char* const why = c.second;
    INFO(text);
    test::require_agent_error([&] { parse_cpu_quantity("GJ_TRAINING_MASTER_CPU_LIMIT", text); },
                              exit_code::kBadEnvironment, why);
  }
}

TEST_CASE("parse_bool and parse_port", "[values]") {
  for (const char* t : {"1", "true", "TRUE", "yes", "on"}) CHECK(parse_bool("B", t));
  for (const char* f : {"0", "false", "No", "off"}) CHECK_FALSE(parse_bool("B", f));
  test::require_agent_error([] { parse_bool("GJ_NO_WAIT", "maybe"); }, exit_code::kBadEnvironment,
                            "GJ_NO_WAIT=\"maybe\" is not a boolean");
  CHECK(parse_port("P", "2222") == 2222);
  test::require_agent_error([] { parse_port("GJ_SSH_PORT", "0"); }, exit_code::kBadEnvironment, "not a TCP port");
  test::require_agent_error([] { parse_port("GJ_SSH_PORT", "70000"); }, exit_code::kBadEnvironment, "not a TCP port");
}

TEST_CASE("split_fields drops empty fields between any separators", "[values]") {
  using V = std::vector<std::string>;
  CHECK(split_fields("a,,b,", ",") == V{"a", "b"});
  CHECK(split_fields("  h slots=2\tmax=4 ", " \t") == V{"h", "slots=2", "max=4"});
  CHECK(split_fields("", ",").empty());
  CHECK(split_fields(",,,", ",").empty());
  CHECK(split_fields("a b", ",") == V{"a b"});
}

// The boolean rule is one definition (collectives/src/common/bool_word.h) shared with the
// library's GJ_COLL_SHM / GJ_COLL_CHECK (tests/collectives/unit/config_test.cpp has the same rows).
TEST_CASE("parse_bool: one rule for every boolean, any letter case", "[values]") {
  const std::pair<const char*, bool> accepted[] = {
      {"1", true},  {"true", true},   {"TRUE", true}, {"Yes", true}, {"on", true},  {"ON", true},
      {"0", false}, {"false", false}, {"False", false}, {"no", false}, {"OFF", false}, {"Off", false}};
  for (const auto& [text, want] : accepted) {
    INFO(text);
    CHECK(parse_bool("GJ_NO_WAIT", text) == want);
  }
  for (const char* bad : {"2", "", "tru", " 1", "1 ", "y", "enabled", "-1"}) {
    INFO('"' << bad << '"');
    test::require_agent_error([&] { parse_bool("GJ_NO_WAIT", bad); }, exit_code::kBadEnvironment,
                              "GJ_NO_WAIT=\"" + std::string(bad) + "\" is not a boolean");
  }
}

TEST_CASE("every boolean setting of the table follows parse_bool's rule", "[values]") {
  int booleans = 0;
  for (const Setting& row : settings_table()) {
    if (row.type != SettingType::Bool || row.platform()) continue;
    ++booleans;
    INFO(row.variable);
    for (const char* good : {"TRUE", "Yes", "OFF", "on", "0"}) {
      INFO(good);
      CHECK_NOTHROW(resolve_settings({{row.variable, good}}));
    }
    for (const char* bad : {"2", "tru", "enabled"}) {
      INFO(bad);
      test::require_agent_error([&] { resolve_settings({{row.variable, bad}}); }, exit_code::kBadEnvironment,
                                std::string(row.variable) + "=\"" + bad + "\"");
    }
  }
  CHECK(booleans >= 4);  // GJ_NO_WAIT, GJ_SSH_CHECK, GJ_NO_SSHD, GJ_DEFAULT_EXPORTS, ...
}
