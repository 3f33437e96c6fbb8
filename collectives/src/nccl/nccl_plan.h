// Pure mapping from the library's (dtype, op) to what the NCCL backend enqueues, so that device
// results follow gj/collectives.h exactly where NCCL's own arithmetic differs:
// - gjAvg on floats with a power-of-two rank count: ncclAvg (NCCL pre-multiplies by 1/n, which is
//   exact then, so it equals divide-then-sum).
// - gjAvg on floats otherwise: a pre-scale kernel rounding x * (1/n) like the MPI backend, then
//   ncclSum (ncclAvg would multiply by 1/n rounded to the 16-bit type for f16/bf16).
// - gjAvg on integers: ncclSum (wrapping), then a truncating division kernel (NCCL's integer
//   average is defined for unsigned types only).
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gj/collectives.h"

namespace gj::nccl {

struct AllreducePlan {
  ncclDataType_t dtype;
  ncclRedOp_t op;
  double prescale = 0.0;  // != 0: recv = send * prescale (device kernel) before the collective
  int postdivide = 0;     // != 0: recv /= postdivide (device kernel) after the collective
};

// Throws gj::Error(gjInvalidArgument) for values outside the enums (api/op_check.cpp validates first).
// Reducible dtypes only (0 .. gjNumReducibleDataTypes-1).
ncclDataType_t to_nccl(gjDataType_t dtype);
AllreducePlan plan_allreduce(gjDataType_t dtype, gjRedOp_t op, int nranks);

// A reduction with Horovod's factors: every element x of the input becomes x * pre before the
// collective (folded with gjAvg's 1/n on floats: one factor pre/n, computed in double, applied
// once with the rounding of cuda::scale), the result * post after it (integers: after the
// truncating division of gjAvg). {1, 1} is plan_allreduce exactly.
struct ScaledPlan {
  AllreducePlan reduce;  // prescale folded in: reduce.prescale != 0 -> one pre-scale kernel
  double postscale = 0.0;  // != 0: recv *= postscale (device kernel) after reduce.postdivide
};
ScaledPlan plan_scaled(gjDataType_t dtype, gjRedOp_t op, int nranks, double pre, double post);

// Data movement (broadcast, allgather): the NCCL type and element count that copy count
// elements of dtype bit for bit. Every dtype: gjInt16 (no 16-bit NCCL integer) moves as
// 2 * count ncclUint8, gjBool and gjByte as ncclUint8.
struct Movement {
  ncclDataType_t dtype;
  std::size_t count;
};
Movement to_movement(gjDataType_t dtype, std::size_t count);

// Per-rank counts (allgatherv, reduce-scatter): equal counts take NCCL's one-call collective
// (ncclAllGather / ncclReduceScatter); otherwise one rooted call per rank with a non-zero count,
// in one NCCL group (ncclBroadcast from each rank's slice / ncclReduce onto each rank).
struct Slice {
  int rank;
  std::size_t offset;  // elements before this rank's slice
  std::size_t count;
};
struct PerRankPlan {
  bool equal = false;        // every count equal: one collective with `count` per rank
  std::size_t count = 0;     // equal: the common count
  std::size_t total = 0;     // sum of the counts
  std::vector<Slice> slices; // !equal: the non-empty slices in rank order
};
PerRankPlan plan_per_rank(const std::size_t* counts, int nranks);

// Where a rank's NCCL would run, as every rank tells the others before NCCL init.
struct Placement {
  int ok = 0;             // NCCL and the device are usable on that rank
  char host[64] = {};     // gethostname, for messages
  char bus_id[32] = {};   // cudaDeviceGetPCIBusId
  std::uint64_t host_hash = 0;  // host_hash(): what tells hosts apart
};

// The host's identity as NCCL computes it: NCCL_HOSTID when set, else the hostname followed by
// the boot id (/proc/sys/kernel/random/boot_id), so two machines that share a hostname (a
// container image's default) are still two hosts. FNV-1a of that text.
std::uint64_t host_hash(const std::string& hostname, const std::string& boot_id, const std::string& nccl_hostid);

// What one rank sees at communicator creation: its host and the PCI bus ids of its visible
// devices (the first kMaxDevices).
struct VisibleDevices {
  static constexpr int kMaxDevices = 16;
  std::uint64_t host_hash = 0;
  char host[64] = {};
  int count = 0;  // cudaGetDeviceCount
  char bus_ids[kMaxDevices][16] = {};
};
// "" when each host has at least as many distinct visible devices as ranks (or NCCL >= 2.30 with
// NCCL_MULTI_RANK_GPU_ENABLE=1 lets ranks share one); else the one-line reason naming the host,
// both counts and what to change: some two ranks there would have to share a device, which
// NCCL refuses, so device buffers could never work on this communicator.
std::string too_many_ranks(const std::vector<VisibleDevices>& ranks, int nccl_version, bool multi_rank_gpu_enabled);
// "" when NCCL can run on these placements; otherwise the one-line reason (naming the two ranks,
// the host and the device, and the fix) why not: two ranks on one device, which NCCL before 2.30
// refuses ("Duplicate GPU detected"), and 2.30+ allows only with NCCL_MULTI_RANK_GPU_ENABLE=1.
std::string shared_device(const std::vector<Placement>& ranks, int nccl_version, bool multi_rank_gpu_enabled);

// An enqueued operation, kept as values so that the fast path builds no strings; describe()
// names it in error messages: "ncclAllReduce(count=1024, dtype=bf16, op=avg)".
struct Operation {
  const char* call;
  std::size_t count;
  gjDataType_t dtype;
  gjRedOp_t op;  // named when root == kReduction
  int root;      // broadcast's root, or kReduction, or kCopy (neither op nor root named)
  static constexpr int kReduction = -1;
  static constexpr int kCopy = -2;
};
std::string describe(const Operation& op);

// How long a host wait for device work (gjWait, finalize) pauses before polling again, after
// waiting `elapsed_us` so far: 0 = yield only (the first 2 ms: most collectives end within them,
// and a sleep's granularity would be most of their time), then 1/32 of the time waited so far,
// 20 us to 1 ms: the latency a sleep adds stays within about 3 % of the wait, and a wait for a
// late peer polls at most about 1000 times a second.
long poll_pause_us(long elapsed_us);

}  // namespace gj::nccl
