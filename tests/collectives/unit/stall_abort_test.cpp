// The watch that ends a job whose host collective outlived GJ_COLL_TIMEOUT_MS (stall_abort.h):
// its limit, and that it fires once for a collective that stays armed, never for short ones.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "stall_abort.h"

using gj::StallAbort;

namespace {

struct Reports {
  std::mutex m;
  std::vector<std::string> lines;
  StallAbort::Fire fire() {
    return [this](const std::string& r) {
      std::lock_guard<std::mutex> lock(m);
      lines.push_back(r);
    };
  }
  std::size_t count() {
    std::lock_guard<std::mutex> lock(m);
    return lines.size();
  }
};

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

}  // namespace

TEST_CASE("StallAbort::limit_ms: the timeout plus a tenth of it, 1 to 30 s; 0 = never", "[stall]") {
  CHECK(StallAbort::limit_ms(0) == 0);
  CHECK(StallAbort::limit_ms(-5) == 0);
  CHECK(StallAbort::limit_ms(50) == 1050);
  CHECK(StallAbort::limit_ms(20000) == 22000);
  CHECK(StallAbort::limit_ms(300000) == 330000);  // five minutes: the grace's upper bound
  CHECK(StallAbort::limit_ms(3600000) == 3630000);
}

TEST_CASE("StallAbort fires once for a collective armed past its limit, naming it", "[stall]") {
  Reports reports;
  StallAbort watch(50, 3, reports.fire());  // limit 1050 ms
  const auto t0 = std::chrono::steady_clock::now();
  watch.arm("gjAllReduce");
  while (reports.count() == 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10)) sleep_ms(5);
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  REQUIRE(reports.count() == 1);
  CHECK(waited.count() >= 1050);
  CHECK(waited.count() < 5000);
  const std::string& r = reports.lines[0];
  CHECK(r.find("gj-coll[3] error: gjAllReduce has run for ") == 0);
  CHECK(r.find("GJ_COLL_TIMEOUT_MS=50") != std::string::npos);
  CHECK(r.find("exit status 124") != std::string::npos);
  watch.disarm();
  sleep_ms(300);
  CHECK(reports.count() == 1);
}

TEST_CASE("StallAbort never fires for collectives that each end within the limit", "[stall]") {
  Reports reports;
  StallAbort watch(50, 0, reports.fire());
  // 1.5 s of back-to-back collectives, each far shorter than the 1050 ms limit.
  for (int i = 0; i < 150; ++i) {
    const gj::Armed armed(watch, "gjBroadcast");
    sleep_ms(10);
  }
  CHECK(reports.count() == 0);
}

TEST_CASE("StallAbort with timeout 0 has no watch at all", "[stall]") {
  Reports reports;
  StallAbort watch(0, 0, reports.fire());
  watch.arm("gjAllReduce");
  sleep_ms(1200);
  CHECK(reports.count() == 0);
  watch.disarm();
}
