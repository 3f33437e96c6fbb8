// The validation rule of each collective (NCCL's argcheck): one function per OpKind, built
// from the pure checks in validate.h. Where buffers live (host or device) is enqueue.cpp's.
#include <string>

#include "adasum/adasum_plan.h"
#include "api/op.h"
#include "comm.h"
#include "dtype.h"
#include "error.h"
#include "validate.h"

namespace gj {
namespace {

// What every reduction checks first: dtype and op in range, the dtype reducible, the factors.
void reduction(const Op& o) {
  validate::dtype(o.call, o.dtype_bits);
  validate::op(o.call, o.op_bits);
  validate::reducible(o.call, o.dtype());
  validate::scale(o.call, o.scale.pre, o.scale.post);
}

Checked allreduce_rule(const Op& o) {
  reduction(o);
  validate::bytes(o.call, "count", o.count, o.dtype());
  validate::buffer(o.call, "sendbuff", o.sendbuff, o.count);
  validate::buffer(o.call, "recvbuff", o.recvbuff, o.count);
  return {o.count};
}

Checked grouped_rule(const Op& o) {
  reduction(o);
  const std::size_t bytes = validate::tensor_list(o.call, o.sendbuffs, o.recvbuffs, o.counts, o.ntensors, o.dtype());
  return {bytes / dtype_size(o.dtype())};
}

Checked broadcast_rule(const gjComm& c, const Op& o) {
  validate::dtype(o.call, o.dtype_bits);
  validate::bytes(o.call, "count", o.count, o.dtype());
  validate::buffer(o.call, "buff", o.recvbuff, o.count);
  validate::root(o.call, o.root, c.size);
  return {o.count};
}

// recvcounts: one per rank (allgather-v), or every rank's the same sendcount (allgather).
Checked allgather_rule(const gjComm& c, const Op& o) {
  validate::dtype(o.call, o.dtype_bits);
  std::size_t total = 0;
  std::size_t mine = 0;
  if (o.kind == OpKind::AllGather) {
    validate::bytes(o.call, "sendcount", o.count, o.dtype());
    std::vector<std::size_t> counts(static_cast<std::size_t>(c.size), o.count);
    total = validate::rank_counts(o.call, "recvcounts", counts.data(), c.size, o.dtype());
    mine = o.count;
  } else {
    total = validate::rank_counts(o.call, "recvcounts", o.recvcounts, c.size, o.dtype());
    mine = o.recvcounts[c.rank];
  }
  validate::buffer(o.call, "sendbuff", o.sendbuff, mine);
  validate::buffer(o.call, "recvbuff", o.recvbuff, total);
  return {total};
}

Checked allgather_late_rule(const Op& o) {
  validate::dtype(o.call, o.dtype_bits);
  validate::bytes(o.call, "sendcount", o.count, o.dtype());
  validate::buffer(o.call, "sendbuff", o.sendbuff, o.count);
  if (o.plan == nullptr) throw Error(gjInvalidArgument, std::string(o.call) + ": plan=NULL");
  return {0};  // the counts are the plan's
}

Checked reduce_scatter_rule(const gjComm& c, const Op& o) {
  reduction(o);
  const std::size_t total = validate::rank_counts(o.call, "recvcounts", o.recvcounts, c.size, o.dtype());
  validate::buffer(o.call, "sendbuff", o.sendbuff, total);
  validate::buffer(o.call, "recvbuff", o.recvbuff, o.recvcounts[c.rank]);
  return {total};
}

Checked alltoallv_rule(const gjComm& c, const Op& o) {
  validate::dtype(o.call, o.dtype_bits);
  const std::size_t out = validate::rank_counts(o.call, "sendcounts", o.sendcounts, c.size, o.dtype());
  const std::size_t in = validate::rank_counts(o.call, "recvcounts", o.recvcounts, c.size, o.dtype());
  validate::buffer(o.call, "sendbuff", o.sendbuff, out);
  validate::buffer(o.call, "recvbuff", o.recvbuff, in);
  if (out > 0 && in > 0 && static_cast<const void*>(o.recvbuff) == o.sendbuff) {
    throw Error(gjInvalidArgument, std::string(o.call) +
                                       ": sendbuff == recvbuff; alltoall is not in place, pass a "
                                       "separate receive buffer");
  }
  return {0};  // counts differ per rank: the record agrees on kind and dtype only
}

Checked adasum_rule(const gjComm& c, const Op& o) {
  validate::dtype(o.call, o.dtype_bits);
  if (!is_floating(o.dtype())) {
    throw Error(gjUnsupported, std::string(o.call) + ": dtype=" + dtype_name(o.dtype()) +
                                   " cannot be combined by Adasum; it takes f32, f64, f16 or bf16");
  }
  validate::bytes(o.call, "count", o.count, o.dtype());
  validate::buffer(o.call, "sendbuff", o.sendbuff, o.count);
  validate::buffer(o.call, "recvbuff", o.recvbuff, o.count);
  if (!adasum::power_of_two(c.size)) {
    throw Error(gjUnsupported, std::string(o.call) + ": the communicator has " + std::to_string(c.size) +
                                   " ranks; Adasum runs on a power of two (as Horovod's), use 1, 2, 4, 8, ... ranks");
  }
  return {o.count};
}

}  // namespace

bool takes_dtype(OpKind kind) { return kind != OpKind::Barrier; }

bool takes_op(OpKind kind) {
  return kind == OpKind::AllReduce || kind == OpKind::GroupedAllReduce || kind == OpKind::ReduceScatter;
}

Checked check_op(const gjComm& c, const Op& o) {
  switch (o.kind) {
    case OpKind::AllReduce:
      return allreduce_rule(o);
    case OpKind::GroupedAllReduce:
      return grouped_rule(o);
    case OpKind::Broadcast:
      return broadcast_rule(c, o);
    case OpKind::AllGather:
    case OpKind::AllGatherV:
      return allgather_rule(c, o);
    case OpKind::AllGatherVLate:
      return allgather_late_rule(o);
    case OpKind::ReduceScatter:
      return reduce_scatter_rule(c, o);
    case OpKind::AllToAllV:
      return alltoallv_rule(c, o);
    case OpKind::Adasum:
      return adasum_rule(c, o);
    case OpKind::Barrier:
      return {0};
  }
  throw Error(gjInternalError, std::string(o.call) + ": no validation rule for this collective");
}

}  // namespace gj
