// One collective call as data (NCCL's ncclInfo): every collective entry point builds an Op with
// the constructor of its kind of call (api/collectives.cpp) and hands it to enqueue(), which
// runs the shared frame, the Op's validation rule (op_check.cpp) and issues its body (enqueue.cpp).
#pragma once

#include <cstddef>

#include "backend.h"
#include "gj/collectives.h"

namespace gj {

enum class OpKind {
  AllReduce,
  GroupedAllReduce,
  Broadcast,
  AllGather,
  AllGatherV,
  AllGatherVLate,
  ReduceScatter,
  AllToAllV,
  Adasum,
  Barrier,
};

// The arguments of one call; what a collective does not take stays as initialized.
struct Op {
  const char* call = "";
  OpKind kind = OpKind::AllReduce;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  std::size_t count = 0;                    // elements: allreduce, broadcast, adasum; allgather's sendcount
  const std::size_t* sendcounts = nullptr;  // one per rank: alltoall-v
  const std::size_t* recvcounts = nullptr;  // one per rank: allgather-v, reduce-scatter, alltoall-v
  // Grouped allreduce: ntensors buffers and counts.
  const void* const* sendbuffs = nullptr;
  void* const* recvbuffs = nullptr;
  const std::size_t* counts = nullptr;
  int ntensors = 0;
  // The C caller's enums as raw bits (enum_bits): checked by enqueue() before dtype() and
  // op() read them as the enums.
  int dtype_bits = gjFloat32;
  int op_bits = gjSum;
  Scale scale;
  int root = 0;
  gjRecvPlan_t plan = nullptr;  // the late allgather's receive plan and its argument
  void* plan_arg = nullptr;
  void* stream = nullptr;  // device buffers: the caller's stream

  gjDataType_t dtype() const { return static_cast<gjDataType_t>(dtype_bits); }
  gjRedOp_t op() const { return static_cast<gjRedOp_t>(op_bits); }
};

// Which of the C caller's enums an Op of this kind carries (checked before use, in the
// documented order: enums, request pointer, communicator, then the rest).
bool takes_dtype(OpKind kind);
bool takes_op(OpKind kind);

// The frame of every collective entry point, in the order a caller's errors are found: the
// enums' raw bits, then a nonblocking call's request out-pointer (validated and cleared),
// then the communicator, then check_op's rule; then the work is issued: now (request ==
// nullptr) or as a request. Never throws.
gjResult_t enqueue(const Op& op, gjComm_t comm, gjRequest_t* request, bool nonblocking);
inline gjResult_t enqueue_blocking(const Op& op, gjComm_t comm) { return enqueue(op, comm, nullptr, false); }
inline gjResult_t enqueue_request(const Op& op, gjComm_t comm, gjRequest_t* request) {
  return enqueue(op, comm, request, true);
}

// What the validation rule found that issuing needs.
struct Checked {
  std::size_t total = 0;  // the elements the agreement record counts (see op_check.cpp)
};

// The validation rule of op's kind against communicator c (argcheck): throws gj::Error
// naming op.call, the argument and the value seen. Does not look at where buffers live.
Checked check_op(const gjComm& c, const Op& op);

}  // namespace gj
