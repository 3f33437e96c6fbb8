// Waiting for a peer's stage counter in shared memory: spin briefly (the peer is usually on
// another core and about to arrive), then yield the CPU on every check (ranks may be
// oversubscribed, e.g. 4 ranks on 2 cores, where spinning would starve the peer we wait
// for), and give up after a timeout instead of hanging when a peer died.
#pragma once

#include <atomic>
#include <cstdint>

namespace gj::shm {

struct WaitPolicy {
  long timeout_ms = 300000;  // 0 = forever
  int spins = 2000;          // checks with a pause instruction before the first yield
};

// Pause-spins before yielding when `ranks` processes share `cpus` CPUs: few when
// oversubscribed (spinning then only burns the time slice the awaited peer needs).
int spins_for(int ranks, int cpus);

// Slow path of wait_at_least (out of line: the fast path is one load).
void wait_slow(const std::atomic<std::uint64_t>& stage, std::uint64_t value, const WaitPolicy& policy, int me,
               int peer);

// Returns once stage >= value. Throws gj::Error(gjTimeout) naming me, peer and the value.
inline void wait_at_least(const std::atomic<std::uint64_t>& stage, std::uint64_t value, const WaitPolicy& policy,
                          int me, int peer) {
  if (stage.load(std::memory_order_acquire) >= value) return;
  wait_slow(stage, value, policy, me, peer);
}

}  // namespace gj::shm
