#include "shm/wait.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <ctime>
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
namespace {

using Clock = std::chrono::steady_clock;

// A sleeper re-checks the clock (and the counter) at least this often, so the timeout holds
// and a lost wake-up would cost at most this long.
constexpr long kSleepSliceNs = 20'000'000;

// A spinner whose peer is late by more than kNapAfterMs (busy elsewhere, e.g. in its backward
// pass while this rank's progress thread waits) naps kNapNs per check instead of yielding: a
// yield loop keeps the thread runnable and takes half the core from this rank's own compute
// threads; the nap adds at most kNapNs to a wait already kNapAfterMs long.
constexpr long kNapAfterMs = 1;
constexpr long kNapNs = 50'000;

// The futex is the counter's low 32 bits: every increment changes them (a wrap of exactly
// 2^32 stages between a sleeper's load and its futex call cannot happen). Not a private
// futex: the word lives in memory shared between processes.
std::uint32_t* futex_word(StageWord& stage) {
  static_assert(sizeof(std::atomic<std::uint64_t>) == 8, "64-bit counter");
  auto* p = reinterpret_cast<std::uint32_t*>(&stage.value);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  ++p;
#endif
  return p;
}

long waited_ms(Clock::time_point start) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
}

[[noreturn]] void throw_timeout(long waited, int me, int peer, std::uint64_t value, std::uint64_t now_at) {
  throw Error(gjTimeout, "shared-memory allreduce: rank " + std::to_string(me) + " waited " + std::to_string(waited) +
                             " ms for rank " + std::to_string(peer) + " to reach stage " + std::to_string(value) +
                             " (it is at " + std::to_string(now_at) +
                             "); the peer died or stalled (raise GJ_COLL_TIMEOUT_MS if it is just slow)");
}

// Asks the engine's peer check about the awaited peer (its process only every kPidCheckMs of
// waiting), then the running collective's check about every rank of its communicator.
void check_peer(const WaitPolicy& policy, int peer, long waited, long& next_pid_ms) {
  if (policy.peers != nullptr) {
    const bool pid = waited >= next_pid_ms;
    if (pid) next_pid_ms = waited + peer::kPidCheckMs;
    policy.peers->check_peer(peer, pid);
  }
  if (peer::t_current != nullptr) peer::t_current->check_any();
}

bool spin(const std::atomic<std::uint64_t>& counter, std::uint64_t value, int spins) {
  for (int i = 0; i < spins; ++i) {
    GJ_CPU_RELAX();
    if (counter.load(std::memory_order_acquire) >= value) return true;
  }
  return false;
}

}  // namespace

WaitMode mode_for(int ranks, int cpus) { return ranks > cpus ? WaitMode::Sleep : WaitMode::Spin; }

WaitPolicy policy_for(long timeout_ms, WaitMode mode) {
  // Sleep mode yields a few times before sleeping: a short wait (a small message, or a peer
  // sharing this CPU) is over after a yield, and a futex sleep + wake costs 20-40 us on this
  // VM (a wake-up interrupt to the other vCPU), 5-10x a whole 4-rank small allreduce.
  if (mode == WaitMode::Sleep) return WaitPolicy{timeout_ms, 50, mode, 16};
  return WaitPolicy{timeout_ms, 4000, mode, 0};
}

void wait_slow(const std::atomic<std::uint64_t>& counter, std::uint64_t value, const WaitPolicy& policy, int me,
               int peer) {
  if (spin(counter, value, policy.spins)) return;
  const auto start = Clock::now();
  long next_pid_ms = 0;
  bool nap = false;
  for (unsigned n = 1;; ++n) {
    if (nap) {
      const timespec t{0, kNapNs};
      nanosleep(&t, nullptr);
    } else {
      sched_yield();
    }
    if (counter.load(std::memory_order_acquire) >= value) return;
    if (n % 64 == 0) {
      const long waited = waited_ms(start);
      nap = waited >= kNapAfterMs;
      check_peer(policy, peer, waited, next_pid_ms);
      if (policy.timeout_ms > 0 && waited >= policy.timeout_ms) throw_timeout(waited, me, peer, value, counter.load());
    }
  }
}

void wait_stage_slow(StageWord& stage, std::uint64_t value, const WaitPolicy& policy, int me, int peer) {
  if (policy.mode == WaitMode::Spin) {
    wait_slow(stage.value, value, policy, me, peer);
    return;
  }
  if (spin(stage.value, value, policy.spins)) return;
  for (int i = 0; i < policy.yields; ++i) {
    sched_yield();
    if (stage.value.load(std::memory_order_acquire) >= value) return;
  }
  const auto start = Clock::now();
  long next_pid_ms = 0;
  for (;;) {
    // Register, then re-check: publish() stores, then looks for sleepers (both seq_cst), so
    // either we see its value here or it sees us and wakes the futex.
    stage.sleepers.fetch_add(1, std::memory_order_seq_cst);
    const std::uint64_t seen = stage.value.load(std::memory_order_seq_cst);
    if (seen < value) {
      const timespec slice{0, kSleepSliceNs};
      // Returns at once (EAGAIN) if the low word moved since `seen`; EINTR and the slice
      // ending are fine too: the loop re-checks.
      syscall(SYS_futex, futex_word(stage), FUTEX_WAIT, static_cast<std::uint32_t>(seen), &slice, nullptr, 0);
    }
    stage.sleepers.fetch_sub(1, std::memory_order_relaxed);
    if (stage.value.load(std::memory_order_acquire) >= value) return;
    const long waited = waited_ms(start);
    check_peer(policy, peer, waited, next_pid_ms);
    if (policy.timeout_ms > 0 && waited >= policy.timeout_ms) throw_timeout(waited, me, peer, value, stage.value.load());
  }
}

void wake_sleepers(StageWord& stage) {
  syscall(SYS_futex, futex_word(stage), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace gj::shm
