// The shared-memory allreduce engine. Per pipeline chunk (see plan.h for the stage protocol):
//   A. each rank copies its input (pre-scaled for float avg) into its own slot, except its
//      own slice, and publishes;
//   B. each rank reduces its slice in rank order from its private input and the peers'
//      slots, into its slot (L1-sized sub-blocks) and straight into its output;
//   C. each rank copies the peers' reduced slices from their slots into its output.
// Small messages skip the scatter: every rank reduces the whole chunk (one sync instead of
// two). Every element is reduced by one rank in rank order, so all ranks get identical bits.
// A group of tensors is one call over their virtual concatenation (Piece): chunks span tensor
// boundaries, so the group costs the synchronizations of one message of the total size and
// no pack/unpack copy, and every element still gets the bits of a per-tensor call (the
// reduction is elementwise, in rank order, whatever chunk or slice the element falls in).
#include "shm/shm_allreduce.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <vector>

#include "dtype.h"
#include "error.h"
#include "host/reduce.h"
#include "mpi_base/mpi_check.h"
#include "shm/cpu_limit.h"
#include "shm/plan.h"
#include "shm/prefault.h"
#include "shm/segment.h"
#include "shm/wait.h"

namespace gj::shm {
namespace {

using Flag = std::atomic<std::uint64_t>;

constexpr std::size_t kControlLine = 128;  // one StageWord per 128 bytes: no false sharing
static_assert(sizeof(StageWord) <= kControlLine, "a stage word fits its control line");
// Tiny messages travel inside one cache line next to their own ready flag, so a peer gets
// flag and data in one cross-core transfer instead of two (flag, then slot): per rank, one
// such line per slot parity, after the stage counters.
constexpr std::size_t kInlineLine = 64;
constexpr std::size_t kInlineBytes = kInlineLine - sizeof(std::uint64_t);
constexpr std::size_t kPage = 4096;
constexpr std::size_t kSubBlockBytes = 16 * 1024;  // accumulator stays in L1 across p passes

std::size_t round_up(std::size_t v, std::size_t to) { return (v + to - 1) / to * to; }

void check_mpi(int rc, const char* call) { mpi_check(rc, std::string("gj::shm::ShmAllreduce::create: ") + call); }

// CPUs the ranks of comm can run on together: the union of their affinity masks, or fewer
// when a rank's cgroup has a smaller CPU quota (a pod's CPU limit, which affinity does not
// show).
int usable_cpus(MPI_Comm comm) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) CPU_SET(0, &set);
  std::vector<unsigned char> bytes(sizeof set);
  std::memcpy(bytes.data(), &set, sizeof set);
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, bytes.data(), static_cast<int>(bytes.size()), MPI_UNSIGNED_CHAR, MPI_BOR,
                          comm),
            "MPI_Allreduce(affinity)");
  std::memcpy(&set, bytes.data(), sizeof set);
  int quota = cgroup_cpu_limit();
  if (quota == 0) quota = INT_MAX;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &quota, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce(cpu quota)");
  return std::max(1, std::min(CPU_COUNT(&set), quota));
}

// One non-empty tensor of a call, at element `at` of the call's virtual concatenation.
struct Piece {
  const unsigned char* send;
  unsigned char* recv;
  std::size_t at;
  std::size_t n;
};

struct Pieces {
  const Piece* first;
  const Piece* last;
};

// Calls f(send, recv, n, off) for every stretch of tensor memory holding virtual elements
// [b, e): send/recv point at the stretch's first element, off is its position from b.
template <class F>
void for_range(const Pieces& ps, std::size_t b, std::size_t e, std::size_t es, F&& f) {
  const Piece* it = ps.first;
  if (ps.last - ps.first > 1) {  // first piece that ends after b
    it = std::upper_bound(ps.first, ps.last, b, [](std::size_t v, const Piece& p) { return v < p.at + p.n; });
  }
  for (; it != ps.last && it->at < e; ++it) {
    const std::size_t lo = std::max(b, it->at), hi = std::min(e, it->at + it->n);
    if (lo >= hi) continue;
    f(it->send + (lo - it->at) * es, it->recv + (lo - it->at) * es, hi - lo, lo - b);
  }
}

class Engine final : public ShmAllreduce {
 public:
  Engine(std::unique_ptr<Segment> segment, std::size_t header, int rank, int size, const ShmOptions& options,
         WaitPolicy policy)
      : seg_(std::move(segment)), header_(header), rank_(rank), size_(size), opt_(options), policy_(policy) {}

  void allreduce(const void* send, void* recv, std::size_t count, gjDataType_t dtype, gjRedOp_t op, double pre,
                 double post) override;
  void allreduce_group(const void* const* sends, void* const* recvs, const std::size_t* counts, int n,
                       gjDataType_t dtype, gjRedOp_t op, double pre, double post) override;
  void reduce_scatter(const void* send, void* recv, const std::size_t* counts, gjDataType_t dtype, gjRedOp_t op,
                      double pre, double post) override;
  void broadcast(void* buf, std::size_t bytes, int root) override;
  void allgatherv(const void* send, void* recv, const std::size_t* bytes) override;
  bool preferred(std::size_t bytes) const override { return bytes > 0 && bytes >= opt_.min_bytes; }
  const char* wait_name() const override { return policy_.mode == WaitMode::Sleep ? "sleeping" : "spinning"; }
  void watch_peers(std::shared_ptr<const peer::PeerCheck> peers) override {
    peers_ = std::move(peers);
    policy_.peers = peers_.get();
  }

 private:
  struct Call {  // one allreduce call, as the chunk functions need it
    gjDataType_t dtype;
    gjRedOp_t op;
    std::size_t es;
    bool scale_inputs;  // contributions times in_factor (prescale; float avg: divide-then-sum)
    bool divide_sum;    // integer avg: exact sum, then truncating division
    double in_factor;
    bool scale_result;  // results times out_factor (postscale)
    double out_factor;
  };
  Call make_call(gjDataType_t dtype, gjRedOp_t op, double pre, double post) const;
  void check_intact() const;
  void check_usable(gjDataType_t dtype, gjRedOp_t op) const;
  // The last steps of an element's reduction: integer avg's division, then postscale.
  void finish(unsigned char* out, std::size_t n, const Call& c) const {
    if (c.divide_sum) host::divide(out, n, c.dtype, size_);
    if (c.scale_result) host::scale(out, out, n, c.dtype, c.out_factor);
  }

  StageWord& stage(int q) const { return *reinterpret_cast<StageWord*>(seg_->base() + kControlLine * (q + 1)); }
  unsigned char* inline_line(int q, std::uint64_t g) const {
    return seg_->base() + kControlLine * (static_cast<std::size_t>(size_) + 1) +
           (static_cast<std::size_t>(q) * kSlots + g % kSlots) * kInlineLine;
  }
  Flag& inline_flag(int q, std::uint64_t g) const { return *reinterpret_cast<Flag*>(inline_line(q, g)); }
  unsigned char* inline_data(int q, std::uint64_t g) const { return inline_line(q, g) + sizeof(std::uint64_t); }
  unsigned char* slot(int q, std::uint64_t g) const {
    return seg_->base() + header_ + (static_cast<std::size_t>(q) * kSlots + g % kSlots) * opt_.chunk_bytes;
  }
  void publish(std::uint64_t value) { shm::publish(stage(rank_), value, policy_); }
  void wait_for(int q, std::uint64_t value) const { wait_at_least(stage(q), value, policy_, rank_, q); }
  void wait_peers(std::uint64_t value) {
    if (value <= peers_at_) return;
    for (int q = 0; q < size_; ++q) {
      if (q != rank_) wait_for(q, value);
    }
    peers_at_ = value;
  }

  // dst = this rank's contribution of n elements (scaled by 1/size for float avg).
  void contribute(unsigned char* dst, const unsigned char* src, std::size_t n, const Call& c) const {
    if (n == 0) return;
    if (c.scale_inputs) host::scale(dst, src, n, c.dtype, c.in_factor);
    else host::copy(dst, src, n * c.es);
  }
  // dst = this rank's contribution of virtual elements [b, e).
  void contribute_range(unsigned char* dst, const Pieces& ps, std::size_t b, std::size_t e, const Call& c) const {
    for_range(ps, b, e, c.es, [&](const unsigned char* in, unsigned char*, std::size_t n, std::size_t off) {
      contribute(dst + off * c.es, in, n, c);
    });
  }

  // Validates, then reduces the virtual concatenation of ps (total elements) chunk by chunk.
  void run(const Pieces& ps, std::size_t total, const Call& c);
  void scatter_round(std::uint64_t g, const unsigned char* send, unsigned char* recv, const std::size_t* counts,
                     const std::vector<std::size_t>& offsets, std::size_t window, std::size_t k, const Call& c);
  void whole_chunk(std::uint64_t g, const Pieces& ps, std::size_t base, std::size_t m, const Call& c);
  void inline_chunk(std::uint64_t g, const Pieces& ps, std::size_t m, const Call& c);
  void sliced_chunk(std::uint64_t g, const Pieces& ps, std::size_t base, std::size_t m, const Call& c);
  void reduce_slice(std::uint64_t g, const Pieces& ps, std::size_t base, Range mine, const Call& c);

  std::unique_ptr<Segment> seg_;
  std::size_t header_;
  int rank_;
  int size_;
  ShmOptions opt_;
  WaitPolicy policy_;
  std::shared_ptr<const peer::PeerCheck> peers_;
  std::uint64_t next_chunk_ = 0;
  // Every peer is known to be at this stage or later: stages only grow, so a wait for a stage
  // at or below it (usually the slot-reuse wait, implied by the previous chunk's waits) is
  // skipped instead of reading every peer's counter line again, a cross-core miss per call.
  std::uint64_t peers_at_ = 0;
  bool broken_ = false;
  std::vector<unsigned char> scratch_ = std::vector<unsigned char>(kSubBlockBytes);
  std::vector<Piece> group_;  // allreduce_group's pieces, kept to reuse the allocation
};

void Engine::allreduce(const void* send, void* recv, std::size_t count, gjDataType_t dtype, gjRedOp_t op,
                       double pre, double post) {
  check_usable(dtype, op);
  const Piece one{static_cast<const unsigned char*>(send), static_cast<unsigned char*>(recv), 0, count};
  run(Pieces{&one, &one + 1}, count, make_call(dtype, op, pre, post));
}

void Engine::check_intact() const {
  if (broken_) {
    throw Error(gjInvalidUsage,
                "shared-memory allreduce: a previous call failed (timeout or error), so the ranks are out of step; "
                "destroy this communicator and create a new one");
  }
}

void Engine::check_usable(gjDataType_t dtype, gjRedOp_t op) const {
  check_intact();
  if (!is_reducible(dtype) || static_cast<unsigned>(op) >= static_cast<unsigned>(gjNumRedOps)) {
    throw Error(gjInvalidArgument, "shared-memory allreduce: dtype=" + std::to_string(static_cast<int>(dtype)) +
                                       " op=" + std::to_string(static_cast<int>(op)) + " is not a valid pair");
  }
}

Engine::Call Engine::make_call(gjDataType_t dtype, gjRedOp_t op, double pre, double post) const {
  const bool fl = is_floating(dtype);
  // Float avg divides every contribution by the rank count, folded into prescale's multiply.
  const double in = op == gjAvg && fl ? pre / size_ : pre;
  return Call{dtype, op, dtype_size(dtype), in != 1.0, op == gjAvg && !fl, in, post != 1.0, post};
}

void Engine::allreduce_group(const void* const* sends, void* const* recvs, const std::size_t* counts, int n,
                             gjDataType_t dtype, gjRedOp_t op, double pre, double post) {
  check_usable(dtype, op);
  group_.clear();
  std::size_t total = 0;
  for (int i = 0; i < n; ++i) {
    if (counts[i] == 0) continue;
    group_.push_back(Piece{static_cast<const unsigned char*>(sends[i]), static_cast<unsigned char*>(recvs[i]),
                           total, counts[i]});
    total += counts[i];
  }
  run(Pieces{group_.data(), group_.data() + group_.size()}, total, make_call(dtype, op, pre, post));
}

void Engine::run(const Pieces& ps, std::size_t total, const Call& c) {
  if (total == 0) return;
  const std::size_t es = c.es;
  const bool whole = total * es <= kWholeReduceMaxBytes;
  const std::size_t per_chunk = chunk_elems(opt_.chunk_bytes, es);
  // Each rank on its own, before the first synchronization (prefault.h).
  for (const Piece* p = ps.first; p != ps.last; ++p) prefault_for_write(p->recv, p->n * es);
  try {
    for (std::size_t off = 0; off < total; off += per_chunk) {
      const std::size_t m = std::min(per_chunk, total - off);
      const std::uint64_t g = next_chunk_++;
      if (g >= kSlots) wait_peers(done(g - kSlots));  // our slot (g % 2) is free again
      if (total * es <= kInlineBytes) inline_chunk(g, ps, m, c);
      else if (whole) whole_chunk(g, ps, off, m, c);
      else sliced_chunk(g, ps, off, m, c);
    }
  } catch (...) {
    broken_ = true;
    throw;
  }
}

void Engine::whole_chunk(std::uint64_t g, const Pieces& ps, std::size_t base, std::size_t m, const Call& c) {
  contribute_range(slot(rank_, g), ps, base, base + m, c);
  publish(published(g));
  wait_peers(published(g));
  // Sources are all slots (ours included), so recv may alias send.
  for_range(ps, base, base + m, c.es, [&](const unsigned char*, unsigned char* out, std::size_t n, std::size_t off) {
    host::copy(out, slot(0, g) + off * c.es, n * c.es);
    for (int q = 1; q < size_; ++q) host::reduce_into(out, slot(q, g) + off * c.es, n, c.dtype, c.op);
    finish(out, n, c);
  });
  publish(done(g));
}

// As whole_chunk, with the data in the inline lines. The stage counter still moves through
// published(g) and done(g), so every other wait keeps its meaning; a peer's inline flag at
// published(g) implies its stage counter is there too (it is stored first).
void Engine::inline_chunk(std::uint64_t g, const Pieces& ps, std::size_t m, const Call& c) {
  contribute_range(inline_data(rank_, g), ps, 0, m, c);
  publish(published(g));
  if (policy_.mode == WaitMode::Sleep) {
    // Sleepers wait on stage words (the inline flags have no room for a sleeper count); the
    // stage store is a release after the data, so it covers the data as the flag would.
    wait_peers(published(g));
  } else {
    inline_flag(rank_, g).store(published(g), std::memory_order_release);
    for (int q = 0; q < size_; ++q) {
      if (q != rank_) wait_at_least(inline_flag(q, g), published(g), policy_, rank_, q);
    }
    peers_at_ = std::max(peers_at_, published(g));
  }
  for_range(ps, 0, m, c.es, [&](const unsigned char*, unsigned char* out, std::size_t n, std::size_t off) {
    host::copy(out, inline_data(0, g) + off * c.es, n * c.es);
    for (int q = 1; q < size_; ++q) host::reduce_into(out, inline_data(q, g) + off * c.es, n, c.dtype, c.op);
    finish(out, n, c);
  });
  publish(done(g));
}

void Engine::sliced_chunk(std::uint64_t g, const Pieces& ps, std::size_t base, std::size_t m, const Call& c) {
  const Range mine = slice_of(m, size_, rank_, c.es);
  unsigned char* my_slot = slot(rank_, g);
  // A: the peers need every slice of our input but our own.
  contribute_range(my_slot, ps, base, base + mine.begin, c);
  contribute_range(my_slot + mine.end * c.es, ps, base + mine.end, base + m, c);
  publish(published(g));

  // B
  if (mine.size() > 0) {
    wait_peers(published(g));
    reduce_slice(g, ps, base, mine, c);
  }
  publish(reduced(g));

  // C: start with the next rank, which most likely finished first.
  for (int k = 1; k < size_; ++k) {
    const int q = (rank_ + k) % size_;
    const Range theirs = slice_of(m, size_, q, c.es);
    if (theirs.size() == 0) continue;
    wait_for(q, reduced(g));
    const unsigned char* reduced_slice = slot(q, g) + theirs.begin * c.es;
    for_range(ps, base + theirs.begin, base + theirs.end, c.es,
              [&](const unsigned char*, unsigned char* out, std::size_t n, std::size_t off) {
                host::copy(out, reduced_slice + off * c.es, n * c.es);
              });
  }
  publish(done(g));
}

// Reduces elements [mine.begin, mine.end) of the chunk at virtual element `base` in rank
// order into our slot, then copies them to the tensors' recv. Our own input is read from send
// here, sub-block by sub-block before that sub-block of recv is written, so send == recv is safe.
void Engine::reduce_slice(std::uint64_t g, const Pieces& ps, std::size_t base, Range mine, const Call& c) {
  const std::size_t block = kSubBlockBytes / c.es;
  for (std::size_t b = mine.begin; b < mine.end; b += block) {
    const std::size_t n = std::min(block, mine.end - b);
    const std::size_t at = b * c.es;
    const std::size_t vb = base + b, ve = vb + n;  // this sub-block, in virtual elements
    unsigned char* acc = slot(rank_, g) + at;
    for (int q = 0; q < size_; ++q) {
      if (q != rank_) {
        if (q == 0) host::copy(acc, slot(q, g) + at, n * c.es);
        else host::reduce_into(acc, slot(q, g) + at, n, c.dtype, c.op);
      } else if (q == 0) {
        contribute_range(acc, ps, vb, ve, c);
      } else if (c.scale_inputs) {
        contribute_range(scratch_.data(), ps, vb, ve, c);
        host::reduce_into(acc, scratch_.data(), n, c.dtype, c.op);
      } else {
        for_range(ps, vb, ve, c.es, [&](const unsigned char* in, unsigned char*, std::size_t k, std::size_t off) {
          host::reduce_into(acc + off * c.es, in, k, c.dtype, c.op);
        });
      }
    }
    finish(acc, n, c);
    for_range(ps, vb, ve, c.es, [&](const unsigned char*, unsigned char* out, std::size_t k, std::size_t off) {
      host::copy(out, acc + off * c.es, k * c.es);
    });
  }
}


// Each chunk g: root waits until every peer is done with its slot's previous use (g - 2),
// copies the chunk in and publishes done(g) (it reads nothing of the peers'); a peer waits for
// root's published(g), copies the chunk out and publishes done(g). The stage numbers and slot
// parity are the allreduce's, so broadcasts and reductions interleave freely.
void Engine::broadcast(void* buf, std::size_t bytes, int root) {
  check_intact();
  if (root < 0 || root >= size_) {
    throw Error(gjInvalidArgument, "shared-memory broadcast: root=" + std::to_string(root) + " is not a rank of 0.." +
                                       std::to_string(size_ - 1));
  }
  auto* data = static_cast<unsigned char*>(buf);
  if (rank_ != root) prefault_for_write(data, bytes);  // a fresh output's faults out of the lockstep
  const std::size_t piece = broadcast_piece(bytes, opt_.chunk_bytes);
  try {
    std::size_t off = 0;
    do {  // at least once: bytes == 0 is the signal
      const std::size_t n = std::min(piece, bytes - off);
      const std::uint64_t g = next_chunk_++;
      if (rank_ == root) {
        if (g >= kSlots) wait_peers(done(g - kSlots));
        if (n > 0) host::copy(slot(root, g), data + off, n);
      } else {
        wait_for(root, published(g));
        if (n > 0) host::copy(data + off, slot(root, g), n);
      }
      publish(done(g));
      off += n;
    } while (off < bytes);
  } catch (...) {
    broken_ = true;
    throw;
  }
}

// Step k (the engine's chunk g) covers bytes [k * chunk, (k + 1) * chunk) of every block: each
// rank waits until every peer is done with its slot's previous use (g - 2), copies its own
// piece in and publishes published(g), then copies each peer's piece out once that peer has
// published, and publishes done(g). A peer whose block has no piece in this chunk is not
// waited for. The stage numbers and slot parity are the allreduce's, so every kind of call
// interleaves freely.
void Engine::allgatherv(const void* send_v, void* recv_v, const std::size_t* bytes) {
  check_intact();
  const auto* send = static_cast<const unsigned char*>(send_v);
  auto* recv = static_cast<unsigned char*>(recv_v);
  std::vector<std::size_t> at(static_cast<std::size_t>(size_));  // each block's offset in recv
  std::size_t total = 0, largest = 0;
  for (int q = 0; q < size_; ++q) {
    at[static_cast<std::size_t>(q)] = total;
    total += bytes[q];
    largest = std::max(largest, bytes[q]);
  }
  if (largest == 0) return;
  prefault_for_write(recv, total);
  const std::size_t mine = bytes[rank_];
  unsigned char* own = recv + at[static_cast<std::size_t>(rank_)];
  if (own != send && mine > 0) host::copy(own, send, mine);
  const auto piece = [&](std::size_t block, std::size_t off) {
    return off < block ? std::min(opt_.chunk_bytes, block - off) : std::size_t{0};
  };
  try {
    for (std::size_t off = 0; off < largest; off += opt_.chunk_bytes) {
      const std::uint64_t g = next_chunk_++;
      if (g >= kSlots) wait_peers(done(g - kSlots));  // our slot (g % 2) is free again
      const std::size_t n = piece(mine, off);
      if (n > 0) host::copy(slot(rank_, g), send + off, n);
      publish(published(g));
      for (int k = 1; k < size_; ++k) {
        const int q = (rank_ + k) % size_;  // each rank starts at its next peer: no slot read by all at once
        const std::size_t m = piece(bytes[q], off);
        if (m == 0) continue;
        wait_for(q, published(g));
        host::copy(recv + at[static_cast<std::size_t>(q)] + off, slot(q, g), m);
      }
      publish(done(g));
    }
  } catch (...) {
    broken_ = true;
    throw;
  }
}

// Reduce-scatter in rounds: round k covers, for every rank q, window k of q's slice (window
// elements from offsets[q] + k * window). Each rank copies its contribution to every other
// rank's window into its own slot at q * window and publishes; each rank then reduces its own
// window in rank order (peers' slots, its own input from send) in its slot's own window, which
// no peer reads, and copies the result to recv. The rounds use the allreduce's stage numbers
// and slot parity, so both kinds of call interleave freely.
void Engine::reduce_scatter(const void* send_v, void* recv_v, const std::size_t* counts, gjDataType_t dtype,
                            gjRedOp_t op, double pre, double post) {
  check_usable(dtype, op);
  const Call c = make_call(dtype, op, pre, post);
  const std::size_t line = kSliceAlignBytes / c.es;
  const std::size_t per_rank = chunk_elems(opt_.chunk_bytes, c.es) / static_cast<std::size_t>(size_);
  const std::size_t window = std::max(line, per_rank / line * line);
  if (window * c.es * static_cast<std::size_t>(size_) > opt_.chunk_bytes) {
    throw Error(gjUnsupported, "shared-memory reduce-scatter: " + std::to_string(size_) +
                                   " ranks do not fit one pipeline chunk of " + std::to_string(opt_.chunk_bytes) +
                                   " bytes");
  }
  std::vector<std::size_t> offsets(static_cast<std::size_t>(size_));
  std::size_t total = 0, largest = 0;
  for (int q = 0; q < size_; ++q) {
    offsets[static_cast<std::size_t>(q)] = total;
    total += counts[q];
    largest = std::max(largest, counts[q]);
  }
  const auto* send = static_cast<const unsigned char*>(send_v);
  auto* recv = static_cast<unsigned char*>(recv_v);
  try {
    for (std::size_t k = 0; k * window < largest; ++k) {
      const std::uint64_t g = next_chunk_++;
      if (g >= kSlots) wait_peers(done(g - kSlots));
      scatter_round(g, send, recv, counts, offsets, window, k, c);
    }
  } catch (...) {
    broken_ = true;
    throw;
  }
}

void Engine::scatter_round(std::uint64_t g, const unsigned char* send, unsigned char* recv, const std::size_t* counts,
                           const std::vector<std::size_t>& offsets, std::size_t window, std::size_t k,
                           const Call& c) {
  const auto window_of = [&](int q) {  // [begin, end) of q's window k, relative to q's slice
    const std::size_t n = counts[q];
    const std::size_t b = std::min(n, k * window);
    return Range{b, std::min(n, b + window)};
  };
  unsigned char* my_slot = slot(rank_, g);
  for (int q = 0; q < size_; ++q) {
    if (q == rank_) continue;
    const Range w = window_of(q);
    contribute(my_slot + static_cast<std::size_t>(q) * window * c.es,
               send + (offsets[static_cast<std::size_t>(q)] + w.begin) * c.es, w.size(), c);
  }
  publish(published(g));

  const Range mine = window_of(rank_);
  if (mine.size() > 0) {
    wait_peers(published(g));
    const std::size_t at_slot = static_cast<std::size_t>(rank_) * window * c.es;
    const unsigned char* own = send + (offsets[static_cast<std::size_t>(rank_)] + mine.begin) * c.es;
    const std::size_t block = kSubBlockBytes / c.es;
    for (std::size_t b = 0; b < mine.size(); b += block) {
      const std::size_t n = std::min(block, mine.size() - b);
      unsigned char* acc = my_slot + at_slot + b * c.es;
      for (int q = 0; q < size_; ++q) {
        if (q != rank_) {
          const unsigned char* theirs = slot(q, g) + at_slot + b * c.es;
          if (q == 0) host::copy(acc, theirs, n * c.es);
          else host::reduce_into(acc, theirs, n, c.dtype, c.op);
        } else if (q == 0) {
          contribute(acc, own + b * c.es, n, c);
        } else if (c.scale_inputs) {
          contribute(scratch_.data(), own + b * c.es, n, c);
          host::reduce_into(acc, scratch_.data(), n, c.dtype, c.op);
        } else {
          host::reduce_into(acc, own + b * c.es, n, c.dtype, c.op);
        }
      }
      finish(acc, n, c);
      host::copy(recv + (mine.begin + b) * c.es, acc, n * c.es);
    }
  }
  publish(done(g));
}

}  // namespace

std::unique_ptr<ShmAllreduce> ShmAllreduce::create(MPI_Comm comm, std::string* why_not) {
  return create(comm, ShmOptions{}, why_not);
}

std::unique_ptr<ShmAllreduce> ShmAllreduce::create(MPI_Comm comm, const ShmOptions& options, std::string* why_not) {
  if (options.chunk_bytes < kWholeReduceMaxBytes || options.chunk_bytes > (std::size_t{1} << 30)) {
    throw Error(gjInvalidArgument, "gj::shm::ShmOptions: chunk_bytes=" + std::to_string(options.chunk_bytes) +
                                       " must be between " + std::to_string(kWholeReduceMaxBytes) + " and 2^30");
  }
  int rank = 0, size = 0, local_size = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  MPI_Comm local = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local), "MPI_Comm_split_type");
  check_mpi(MPI_Comm_size(local, &local_size), "MPI_Comm_size");
  check_mpi(MPI_Comm_free(&local), "MPI_Comm_free");
  if (local_size != size) {
    // Every rank sees local_size < size here, so all return nullptr together.
    if (why_not != nullptr) {
      *why_not = "ranks span nodes (" + std::to_string(local_size) + " of " + std::to_string(size) +
                 " ranks share this node)";
    }
    return nullptr;
  }

  ShmOptions opt = options;
  opt.chunk_bytes = round_up(opt.chunk_bytes, kPage);
  const std::size_t header =
      round_up(kControlLine * (static_cast<std::size_t>(size) + 1) + kInlineLine * kSlots * size, kPage);
  const std::size_t bytes = header + static_cast<std::size_t>(size) * kSlots * opt.chunk_bytes;
  auto segment = Segment::map_shared(comm, bytes, why_not);
  if (!segment) return nullptr;
  // The protocol needs one mode on every rank (a spinning rank neither wakes sleepers nor
  // reads the stage words sleepers publish small messages through).
  int wait = static_cast<int>(opt.wait);
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &wait, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce(wait mode)");
  const auto agreed = static_cast<ShmOptions::Wait>(wait);
  const WaitMode mode = agreed == ShmOptions::Wait::Sleep  ? WaitMode::Sleep
                        : agreed == ShmOptions::Wait::Spin ? WaitMode::Spin
                                                           : mode_for(size, usable_cpus(comm));
  const WaitPolicy policy = policy_for(opt.timeout_ms, mode);
  return std::make_unique<Engine>(std::move(segment), header, rank, size, opt, policy);
}

}  // namespace gj::shm
