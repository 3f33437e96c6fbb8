#include <catch2/catch.hpp>

#include <string>

#include "config.h"
#include "error.h"

using gj::BackendChoice;
using gj::Config;
using Env = std::map<std::string, std::string>;

TEST_CASE("parse_config: defaults when nothing is set", "[config]") {
  const Config c = gj::parse_config({});
  CHECK(c.backend == BackendChoice::Auto);
  CHECK(c.fusion_bytes == (std::size_t{64} << 20));
  CHECK(c.timeout_ms == 300000);
  CHECK(c.shm);
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
