// When the progress thread waits patiently (queue.h): the pure rule behind
// GJ_COLL_PROGRESS_WAIT=auto, and the forced choices.
#include <catch2/catch.hpp>

#include "queue.h"

using gj::ProgressWait;

TEST_CASE("patient_progress: auto counts a compute and a progress thread per rank", "[queue]") {
  // 2 ranks on a 2-core VM: 4 threads want 2 CPUs.
  CHECK(gj::patient_progress(ProgressWait::Auto, 2, 2));
  // A rank bound to one core (mpiexec's default at np <= cores): its progress thread shares it.
  CHECK(gj::patient_progress(ProgressWait::Auto, 1, 1));
  CHECK(gj::patient_progress(ProgressWait::Auto, 8, 1));
  // CPUs to spare: the progress thread has a core of its own.
  CHECK_FALSE(gj::patient_progress(ProgressWait::Auto, 2, 4));
  CHECK_FALSE(gj::patient_progress(ProgressWait::Auto, 8, 64));
  CHECK(gj::patient_progress(ProgressWait::Auto, 8, 15));
  CHECK_FALSE(gj::patient_progress(ProgressWait::Auto, 1, 2));
}

TEST_CASE("patient_progress: spin and sleep override the rule", "[queue]") {
  CHECK_FALSE(gj::patient_progress(ProgressWait::Spin, 8, 1));
  CHECK(gj::patient_progress(ProgressWait::Sleep, 1, 64));
}

TEST_CASE("cpus_of_this_process: at least one, at most the affinity mask", "[queue]") {
  const int cpus = gj::cpus_of_this_process();
  CHECK(cpus >= 1);
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(sched_getaffinity(0, sizeof set, &set) == 0);
  CHECK(cpus <= CPU_COUNT(&set));
}

TEST_CASE("engine_wait: a patient progress thread makes the engine's auto waits sleep", "[queue]") {
  using gj::ShmWait;
  CHECK(gj::engine_wait(ShmWait::Auto, true) == ShmWait::Sleep);
  CHECK(gj::engine_wait(ShmWait::Auto, false) == ShmWait::Auto);  // the engine's own rule (ranks vs CPUs)
  CHECK(gj::engine_wait(ShmWait::Spin, true) == ShmWait::Spin);
  CHECK(gj::engine_wait(ShmWait::Sleep, false) == ShmWait::Sleep);
}
