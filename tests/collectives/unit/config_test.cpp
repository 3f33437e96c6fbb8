#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include "bool_word.h"
#include "config.h"
#include "error.h"

using gj::BackendChoice;
using gj::Config;
using Env = std::map<std::string, std::string>;

TEST_CASE("parse_config: defaults when nothing is set", "[config]") {
  const Config c = gj::parse_config({});
  CHECK(c.backend == BackendChoice::Auto);
  CHECK(c.fusion_bytes == (std::size_t{64} << 20));
  CHECK(c.timeout_ms == 0);  // for ever: a long checkpoint on one rank must not end the job
  CHECK(c.shm);
  CHECK(c.hierarchical);
  CHECK(c.shm_wait == gj::ShmWait::Auto);
  CHECK(c.progress_wait == gj::ProgressWait::Auto);
  CHECK(c.log_level == gj::LogLevel::Warn);
  CHECK_FALSE(c.check);
}

TEST_CASE("parse_config: accepted values", "[config]") {
  struct Row {
    const char* name;
    const char* value;
    void (*verify)(const Config&);
  };
  const Row rows[] = {
      {"GJ_COLL_BACKEND", "mpi", [](const Config& c) { CHECK(c.backend == BackendChoice::Mpi); }},
      {"GJ_COLL_BACKEND", "nccl", [](const Config& c) { CHECK(c.backend == BackendChoice::Nccl); }},
      {"GJ_COLL_BACKEND", "auto", [](const Config& c) { CHECK(c.backend == BackendChoice::Auto); }},
      {"GJ_COLL_BACKEND", "", [](const Config& c) { CHECK(c.backend == BackendChoice::Auto); }},
      {"GJ_COLL_FUSION_BYTES", "0", [](const Config& c) { CHECK(c.fusion_bytes == 0); }},
      {"GJ_COLL_FUSION_BYTES", "1048576", [](const Config& c) { CHECK(c.fusion_bytes == 1048576); }},
      {"GJ_COLL_FUSION_BYTES", "4k", [](const Config& c) { CHECK(c.fusion_bytes == 4096); }},
      {"GJ_COLL_FUSION_BYTES", "25M", [](const Config& c) { CHECK(c.fusion_bytes == 25u << 20); }},
      {"GJ_COLL_FUSION_BYTES", "1G", [](const Config& c) { CHECK(c.fusion_bytes == std::size_t{1} << 30); }},
      {"GJ_COLL_TIMEOUT_MS", "0", [](const Config& c) { CHECK(c.timeout_ms == 0); }},
      {"GJ_COLL_TIMEOUT_MS", "1500", [](const Config& c) { CHECK(c.timeout_ms == 1500); }},
      {"GJ_COLL_SHM", "0", [](const Config& c) { CHECK_FALSE(c.shm); }},
      {"GJ_COLL_SHM", "off", [](const Config& c) { CHECK_FALSE(c.shm); }},
      {"GJ_COLL_SHM", "yes", [](const Config& c) { CHECK(c.shm); }},
      {"GJ_COLL_HIERARCHICAL", "0", [](const Config& c) { CHECK_FALSE(c.hierarchical); }},
      {"GJ_COLL_HIERARCHICAL", "Off", [](const Config& c) { CHECK_FALSE(c.hierarchical); }},
      {"GJ_COLL_HIERARCHICAL", "1", [](const Config& c) { CHECK(c.hierarchical); }},
      {"GJ_COLL_SHM_WAIT", "sleep", [](const Config& c) { CHECK(c.shm_wait == gj::ShmWait::Sleep); }},
      {"GJ_COLL_SHM_WAIT", "spin", [](const Config& c) { CHECK(c.shm_wait == gj::ShmWait::Spin); }},
      {"GJ_COLL_SHM_WAIT", "auto", [](const Config& c) { CHECK(c.shm_wait == gj::ShmWait::Auto); }},
      {"GJ_COLL_PROGRESS_WAIT", "sleep", [](const Config& c) { CHECK(c.progress_wait == gj::ProgressWait::Sleep); }},
      {"GJ_COLL_PROGRESS_WAIT", "spin", [](const Config& c) { CHECK(c.progress_wait == gj::ProgressWait::Spin); }},
      {"GJ_COLL_PROGRESS_WAIT", "auto", [](const Config& c) { CHECK(c.progress_wait == gj::ProgressWait::Auto); }},
      {"GJ_COLL_LOG_LEVEL", "debug", [](const Config& c) { CHECK(c.log_level == gj::LogLevel::Debug); }},
      {"GJ_COLL_LOG_LEVEL", "error", [](const Config& c) { CHECK(c.log_level == gj::LogLevel::Error); }},
      {"GJ_COLL_CHECK", "1", [](const Config& c) { CHECK(c.check); }},
      {"GJ_COLL_CHECK", "false", [](const Config& c) { CHECK_FALSE(c.check); }},
      {"GJ_COLL_UNKNOWN_FUTURE", "x", [](const Config& c) { CHECK(c.backend == BackendChoice::Auto); }},
  };
  for (const Row& row : rows) {
    INFO(row.name << "=" << row.value);
    row.verify(gj::parse_config(Env{{row.name, row.value}}));
  }
}

TEST_CASE("parse_config: rejected values name the variable, the value and what is accepted", "[config]") {
  struct Row {
    const char* name;
    const char* value;
    const char* accepted;
  };
  const Row rows[] = {
      {"GJ_COLL_BACKEND", "gpu", "auto, mpi, nccl"},
      {"GJ_COLL_BACKEND", "MPI", "auto, mpi, nccl"},
      {"GJ_COLL_FUSION_BYTES", "-1", "non-negative byte count"},
      {"GJ_COLL_FUSION_BYTES", "abc", "non-negative byte count"},
      {"GJ_COLL_FUSION_BYTES", "12 ", "non-negative byte count"},
      {"GJ_COLL_FUSION_BYTES", "M", "non-negative byte count"},
      {"GJ_COLL_FUSION_BYTES", "99999999999999999999", "non-negative byte count"},
      {"GJ_COLL_FUSION_BYTES", "17179869184G", "non-negative byte count"},
      {"GJ_COLL_TIMEOUT_MS", "-5", "milliseconds"},
      {"GJ_COLL_TIMEOUT_MS", "1.5", "milliseconds"},
      {"GJ_COLL_TIMEOUT_MS", "9223372036854775808", "milliseconds"},
      {"GJ_COLL_SHM", "2", "1, 0, true"},
      {"GJ_COLL_HIERARCHICAL", "two", "1, 0, true"},
      {"GJ_COLL_SHM_WAIT", "yield", "auto, spin, sleep"},
      {"GJ_COLL_SHM_WAIT", "Sleep", "auto, spin, sleep"},
      {"GJ_COLL_PROGRESS_WAIT", "nap", "auto, spin, sleep"},
      {"GJ_COLL_LOG_LEVEL", "verbose", "error, warn, info, debug"},
      {"GJ_COLL_CHECK", "maybe", "1, 0, true"},
  };
  for (const Row& row : rows) {
    INFO(row.name << "=" << row.value);
    try {
      gj::parse_config(Env{{row.name, row.value}});
      FAIL("accepted");
    } catch (const gj::Error& e) {
      CHECK(e.code() == gjInvalidArgument);
      const std::string msg = e.what();
      CHECK_THAT(msg, Catch::Contains(std::string(row.name) + "=\"" + row.value + "\""));
      CHECK_THAT(msg, Catch::Contains(row.accepted));
    }
  }
}

// One boolean rule for every GJ_* switch of the library and the agent (common/bool_word.h;
// tests/agent/test_value_parsers.cpp has the same rows for the agent's parse_bool).
TEST_CASE("parse_config: boolean switches accept any letter case and nothing else", "[config]") {
  struct Accepted {
    const char* value;
    bool want;
  };
  const Accepted accepted[] = {{"1", true},   {"true", true},   {"TRUE", true}, {"Yes", true},
                               {"ON", true},  {"0", false},     {"false", false}, {"False", false},
                               {"No", false}, {"OFF", false},   {"off", false}};
  for (const char* name : {"GJ_COLL_SHM", "GJ_COLL_CHECK"}) {
    for (const Accepted& a : accepted) {
      INFO(name << "=" << a.value);
      const Config c = gj::parse_config(Env{{name, a.value}});
      CHECK((std::string(name) == "GJ_COLL_SHM" ? c.shm : c.check) == a.want);
    }
    // Empty means unset (the default), for every GJ_* variable of the library and the agent.
    const Config unset = gj::parse_config(Env{{name, ""}});
    CHECK(unset.shm);
    CHECK_FALSE(unset.check);
    for (const char* bad : {"2", "tru", " 1", "1 ", "y", "-1"}) {
      INFO(name << "=\"" << bad << "\"");
      try {
        gj::parse_config(Env{{name, bad}});
        FAIL("accepted");
      } catch (const gj::Error& e) {
        CHECK(e.code() == gjInvalidArgument);
        const std::string msg = e.what();
        CHECK_THAT(msg, Catch::Contains(std::string(name) + "=\"" + bad + "\""));
        CHECK_THAT(msg, Catch::Contains("1, 0, true, false, yes, no, on, off"));
      }
    }
  }
}

TEST_CASE("bool_word: the boolean words, nothing else", "[config]") {
  for (const char* t : {"1", "true", "TRUE", "Yes", "on", "On"}) CHECK(gj::bool_word(t) == std::optional<bool>(true));
  for (const char* f : {"0", "false", "No", "OFF", "off"}) CHECK(gj::bool_word(f) == std::optional<bool>(false));
  for (const char* bad : {"", "2", "tru", "truee", " 1", "1 ", "y", "-1", "o"}) {
    INFO('"' << bad << '"');
    CHECK_FALSE(gj::bool_word(bad).has_value());
  }
}
