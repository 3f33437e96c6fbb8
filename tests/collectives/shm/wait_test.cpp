// The wait primitives with two threads of one process (the futex is not a private one, so
// threads exercise the same code as processes over a shared segment).
#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <chrono>
#include <string>
#include <thread>

#include "error.h"
#include "shm/wait.h"

using gj::shm::StageWord;
using gj::shm::WaitMode;
using gj::shm::WaitPolicy;
using namespace std::chrono_literals;

namespace {

// CPU seconds this thread has used.
double thread_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct WaitOutcome {
  double cpu_seconds = 0;
  double wall_seconds = 0;
};

// A thread waits for stage >= 3 while this one publishes 1, 2 (not enough), then 3 after `delay`.
WaitOutcome wait_for_late_publish(WaitMode mode, std::chrono::milliseconds delay) {
  StageWord word;
  const WaitPolicy policy = gj::shm::policy_for(10000, mode);
  WaitOutcome out;
  std::thread waiter([&] {
    const double cpu0 = thread_cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    gj::shm::wait_at_least(word, 3, policy, 0, 1);
    out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.cpu_seconds = thread_cpu_seconds() - cpu0;
  });
  std::this_thread::sleep_for(delay / 4);
  gj::shm::publish(word, 1, policy);
  gj::shm::publish(word, 2, policy);
  std::this_thread::sleep_for(delay);
  gj::shm::publish(word, 3, policy);
  waiter.join();
  return out;
}

}  // namespace

TEST_CASE("sleep mode when the ranks outnumber the CPUs, else spin", "[shm][wait]") {
  CHECK(gj::shm::mode_for(4, 2) == WaitMode::Sleep);
  CHECK(gj::shm::mode_for(3, 2) == WaitMode::Sleep);
  CHECK(gj::shm::mode_for(2, 2) == WaitMode::Spin);
  CHECK(gj::shm::mode_for(1, 64) == WaitMode::Spin);
  CHECK(gj::shm::policy_for(5, WaitMode::Sleep).spins < gj::shm::policy_for(5, WaitMode::Spin).spins);
  CHECK(gj::shm::policy_for(5, WaitMode::Sleep).timeout_ms == 5);
  CHECK(gj::shm::policy_for(5, WaitMode::Sleep).yields > 0);  // short waits end before a futex round trip
  CHECK(gj::shm::policy_for(5, WaitMode::Spin).yields == 0);
}

TEST_CASE("a sleeping waiter returns when the stage is reached, and sleeps meanwhile", "[shm][wait]") {
  const WaitOutcome o = wait_for_late_publish(WaitMode::Sleep, 300ms);
  CHECK(o.wall_seconds >= 0.3);
  CHECK(o.wall_seconds < 5.0);
  // Asleep, not yielding in a loop: a yielding waiter burns most of the 375 ms when the CPU
  // is otherwise idle.
  CHECK(o.cpu_seconds < 0.05);
}

TEST_CASE("a spinning waiter returns when the stage is reached", "[shm][wait]") {
  const WaitOutcome o = wait_for_late_publish(WaitMode::Spin, 50ms);
  CHECK(o.wall_seconds >= 0.05);
  CHECK(o.wall_seconds < 5.0);
}

TEST_CASE("a spinning waiter on a late peer naps instead of yielding in a loop", "[shm][wait]") {
  // 375 ms late: after 1 ms the waiter naps 50 us per check; a yield loop would use most of
  // the 375 ms of CPU (the rank's compute threads need that core).
  const WaitOutcome o = wait_for_late_publish(WaitMode::Spin, 300ms);
  CHECK(o.wall_seconds >= 0.3);
  CHECK(o.wall_seconds < 5.0);
  CHECK(o.cpu_seconds < 0.15);
}

TEST_CASE("a stage already reached returns without waiting", "[shm][wait]") {
  for (WaitMode mode : {WaitMode::Spin, WaitMode::Sleep}) {
    StageWord word;
    const WaitPolicy policy = gj::shm::policy_for(1, mode);
    gj::shm::publish(word, 7, policy);
    CHECK_NOTHROW(gj::shm::wait_at_least(word, 7, policy, 0, 1));
    CHECK_NOTHROW(gj::shm::wait_at_least(word, 2, policy, 0, 1));
    CHECK(word.sleepers.load() == 0);
  }
}

TEST_CASE("a peer that never arrives is a timeout naming both ranks and the stage", "[shm][wait]") {
  for (WaitMode mode : {WaitMode::Spin, WaitMode::Sleep}) {
    CAPTURE(mode == WaitMode::Sleep);
    StageWord word;
    gj::shm::publish(word, 4, gj::shm::policy_for(0, mode));
    const auto t0 = std::chrono::steady_clock::now();
    try {
      gj::shm::wait_at_least(word, 5, gj::shm::policy_for(150, mode), 2, 3);
      FAIL("no timeout");
    } catch (const gj::Error& e) {
      CHECK(e.code() == gjTimeout);
      const std::string what = e.what();
      CHECK_THAT(what, Catch::Contains("rank 2 waited") && Catch::Contains("for rank 3 to reach stage 5") &&
                           Catch::Contains("(it is at 4)"));
    }
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(waited >= 0.15);
    CHECK(waited < 3.0);
    CHECK(word.sleepers.load() == 0);
  }
}
