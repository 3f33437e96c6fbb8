#include "shm/wait.h"

#include <sched.h>

#include <chrono>
#include <string>

#include "error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define GJ_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define GJ_CPU_RELAX() asm volatile("yield" ::: "memory")
#else
#define GJ_CPU_RELAX() ((void)0)
#endif

namespace gj::shm {

int spins_for(int ranks, int cpus) { return ranks > cpus ? 50 : 4000; }

void wait_slow(const std::atomic<std::uint64_t>& stage, std::uint64_t value, const WaitPolicy& policy, int me,
               int peer) {
  for (int i = 0; i < policy.spins; ++i) {
    GJ_CPU_RELAX();
    if (stage.load(std::memory_order_acquire) >= value) return;
  }
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  for (unsigned n = 1;; ++n) {
    sched_yield();
    if (stage.load(std::memory_order_acquire) >= value) return;
    if (policy.timeout_ms > 0 && n % 64 == 0) {
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
      if (waited >= policy.timeout_ms) {
        throw Error(gjTimeout, "shared-memory allreduce: rank " + std::to_string(me) + " waited " +
                                   std::to_string(waited) + " ms for rank " + std::to_string(peer) +
                                   " to reach stage " + std::to_string(value) + " (it is at " +
                                   std::to_string(stage.load()) +
                                   "); the peer died or stalled (raise GJ_COLL_TIMEOUT_MS if it is just slow)");
      }
    }
  }
}

}  // namespace gj::shm
