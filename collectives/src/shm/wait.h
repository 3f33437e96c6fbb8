// Waiting for a peer's stage counter in shared memory. Two modes, chosen per communicator:
//  - spin (ranks <= CPUs): spin briefly with a pause instruction (the peer is on another core
//    and about to arrive), then yield the CPU on every check, and once the wait passed 1 ms
//    nap 50 us per check (a late peer: the CPU goes to this rank's other threads);
//  - sleep (ranks outnumber CPUs, e.g. 4 ranks on 2 cores, or the progress thread shares its
//    rank's CPU with compute threads): after a few spins and a few
//    yields, sleep on a futex on the counter, so the CPU goes to a rank that has work instead
//    of to waiters that keep waking up to yield; the publisher wakes sleepers only when there
//    are any.
// Both give up after a timeout instead of hanging when a peer stalled, and ask the policy's
// peer check now and then, so that a peer known gone fails the wait at once (gjPeerLost).
#pragma once

#include <atomic>
#include <cstdint>

#include "mpi_base/peer_check.h"

namespace gj::shm {

enum class WaitMode { Spin, Sleep };

struct WaitPolicy {
  long timeout_ms = 0;  // 0 = forever; callers pass GJ_COLL_TIMEOUT_MS
  int spins = 2000;          // checks with a pause instruction before yielding / sleeping
  WaitMode mode = WaitMode::Spin;
  int yields = 0;            // sleep mode: checks with a sched_yield before sleeping
  const peer::PeerCheck* peers = nullptr;  // asked while a wait is not satisfied; may be null
};

// Sleep when `ranks` processes share fewer `cpus` (spinning then only burns the time slice
// the awaited peer needs), else spin.
WaitMode mode_for(int ranks, int cpus);
// Spins before yielding / sleeping: many when spinning pays, few before sleeping.
WaitPolicy policy_for(long timeout_ms, WaitMode mode);

// One rank's progress in shared memory: a counter that only grows, and how many peers sleep
// on it (sleep mode). Zero bytes are a valid initial state (a fresh shared segment).
struct StageWord {
  std::atomic<std::uint64_t> value{0};
  std::atomic<std::uint32_t> sleepers{0};
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free && std::atomic<std::uint32_t>::is_always_lock_free,
              "stage words must be plain lock-free words to live in shared memory");

// Slow paths (out of line: the fast paths are one load / one store).
void wait_slow(const std::atomic<std::uint64_t>& counter, std::uint64_t value, const WaitPolicy& policy, int me,
               int peer);
void wait_stage_slow(StageWord& stage, std::uint64_t value, const WaitPolicy& policy, int me, int peer);
void wake_sleepers(StageWord& stage);

// Returns once counter >= value, spinning then yielding whatever the policy's mode (for
// counters that have no StageWord around them). Throws gj::Error(gjTimeout) naming me, peer
// and the value, or the peer check's gjPeerLost.
inline void wait_at_least(const std::atomic<std::uint64_t>& counter, std::uint64_t value, const WaitPolicy& policy,
                          int me, int peer) {
  if (counter.load(std::memory_order_acquire) >= value) return;
  wait_slow(counter, value, policy, me, peer);
}

// As above for a peer's stage word; in sleep mode the wait sleeps on it.
inline void wait_at_least(StageWord& stage, std::uint64_t value, const WaitPolicy& policy, int me, int peer) {
  if (stage.value.load(std::memory_order_acquire) >= value) return;
  wait_stage_slow(stage, value, policy, me, peer);
}

// Stores value (release) into this rank's stage word. In sleep mode the store and the check
// for sleepers are sequentially consistent, pairing with the sleeper's register-then-recheck,
// so a sleeper either sees the new value or is woken.
inline void publish(StageWord& stage, std::uint64_t value, const WaitPolicy& policy) {
  if (policy.mode == WaitMode::Spin) {
    stage.value.store(value, std::memory_order_release);
    return;
  }
  stage.value.store(value, std::memory_order_seq_cst);
  if (stage.sleepers.load(std::memory_order_seq_cst) != 0) wake_sleepers(stage);
}

}  // namespace gj::shm
