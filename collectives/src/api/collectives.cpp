// The collective entry points (NCCL's collectives.cc): each builds its Op (op.h) with the one
// constructor of its kind of call below and hands it to enqueue(); validation is op_check.cpp's,
// issuing enqueue.cpp's. The enums are copied as raw bits (enum_bits): a C caller's out-of-range
// value must not be loaded as the C++ enum.
#include "gj/collectives.h"

#include "api/op.h"
#include "dtype.h"

namespace {

using gj::Op;
using gj::OpKind;
using gj::Scale;

// The enums are taken by reference and copied as bits: passing a C caller's out-of-range value
// by value would load it as the enum, which is what enum_bits avoids.
Op make(const char* call, OpKind kind) {
  Op o;
  o.call = call;
  o.kind = kind;
  return o;
}

Op make(const char* call, OpKind kind, const gjDataType_t& dtype, void* stream = nullptr) {
  Op o = make(call, kind);
  o.dtype_bits = gj::enum_bits(dtype);
  o.stream = stream;
  return o;
}

// One constructor per kind of call: the blocking, scaled and nonblocking entry points of a
// collective share it.
Op allreduce_op(const char* call, const void* sendbuff, void* recvbuff, size_t count, const gjDataType_t& dtype,
                const gjRedOp_t& op, Scale scale, void* stream) {
  Op o = make(call, OpKind::AllReduce, dtype, stream);
  o.sendbuff = sendbuff;
  o.recvbuff = recvbuff;
  o.count = count;
  o.op_bits = gj::enum_bits(op);
  o.scale = scale;
  return o;
}

Op grouped_allreduce_op(const char* call, const void* const* sendbuffs, void* const* recvbuffs, const size_t* counts,
                        int ntensors, const gjDataType_t& dtype, const gjRedOp_t& op, Scale scale, void* stream) {
  Op o = make(call, OpKind::GroupedAllReduce, dtype, stream);
  o.sendbuffs = sendbuffs;
  o.recvbuffs = recvbuffs;
  o.counts = counts;
  o.ntensors = ntensors;
  o.op_bits = gj::enum_bits(op);
  o.scale = scale;
  return o;
}

Op broadcast_op(const char* call, void* buff, size_t count, const gjDataType_t& dtype, int root, void* stream) {
  Op o = make(call, OpKind::Broadcast, dtype, stream);
  o.recvbuff = buff;
  o.count = count;
  o.root = root;
  return o;
}

// Allgather (count: what each rank sends), allgather-v (recvcounts: one per rank) and
// alltoall-v (both count arrays) are one shape of call: buffers and counts.
Op exchange_op(const char* call, OpKind kind, const void* sendbuff, void* recvbuff, size_t sendcount,
               const size_t* sendcounts, const size_t* recvcounts, const gjDataType_t& dtype, void* stream) {
  Op o = make(call, kind, dtype, stream);
  o.sendbuff = sendbuff;
  o.recvbuff = recvbuff;
  o.count = sendcount;
  o.sendcounts = sendcounts;
  o.recvcounts = recvcounts;
  return o;
}

Op late_allgather_op(const char* call, const void* sendbuff, size_t sendcount, const gjDataType_t& dtype, gjRecvPlan_t plan,
                     void* arg) {
  Op o = make(call, OpKind::AllGatherVLate, dtype);
  o.sendbuff = sendbuff;
  o.count = sendcount;
  o.plan = plan;
  o.plan_arg = arg;
  return o;
}

Op reduce_scatter_op(const char* call, const void* sendbuff, void* recvbuff, const size_t* recvcounts,
                     const gjDataType_t& dtype, const gjRedOp_t& op, Scale scale, void* stream) {
  Op o = make(call, OpKind::ReduceScatter, dtype, stream);
  o.sendbuff = sendbuff;
  o.recvbuff = recvbuff;
  o.recvcounts = recvcounts;
  o.op_bits = gj::enum_bits(op);
  o.scale = scale;
  return o;
}

Op adasum_op(const char* call, const void* sendbuff, void* recvbuff, size_t count, const gjDataType_t& dtype) {
  Op o = make(call, OpKind::Adasum, dtype);
  o.sendbuff = sendbuff;
  o.recvbuff = recvbuff;
  o.count = count;
  return o;
}

}  // namespace

extern "C" {

gjResult_t gjAllReduce(const void* sendbuff, void* recvbuff, size_t count, gjDataType_t dtype, gjRedOp_t op,
                       gjComm_t comm, void* stream) {
  return gj::enqueue_blocking(allreduce_op("gjAllReduce", sendbuff, recvbuff, count, dtype, op, {}, stream), comm);
}

gjResult_t gjAllReduceScaled(const void* sendbuff, void* recvbuff, size_t count, gjDataType_t dtype, gjRedOp_t op,
                             double prescale, double postscale, gjComm_t comm, void* stream) {
  return gj::enqueue_blocking(allreduce_op("gjAllReduceScaled", sendbuff, recvbuff, count, dtype, op,
                                           Scale{prescale, postscale}, stream), comm);
}

gjResult_t gjIallReduce(const void* sendbuff, void* recvbuff, size_t count, gjDataType_t dtype, gjRedOp_t op,
                        double prescale, double postscale, gjComm_t comm, void* stream, gjRequest_t* request) {
  return gj::enqueue_request(allreduce_op("gjIallReduce", sendbuff, recvbuff, count, dtype, op,
                                          Scale{prescale, postscale}, stream), comm, request);
}

gjResult_t gjBroadcast(void* buff, size_t count, gjDataType_t dtype, int root, gjComm_t comm, void* stream) {
  return gj::enqueue_blocking(broadcast_op("gjBroadcast", buff, count, dtype, root, stream), comm);
}

gjResult_t gjIbroadcast(void* buff, size_t count, gjDataType_t dtype, int root, gjComm_t comm, void* stream,
                        gjRequest_t* request) {
  return gj::enqueue_request(broadcast_op("gjIbroadcast", buff, count, dtype, root, stream), comm, request);
}

gjResult_t gjGroupedAllReduce(const void* const* sendbuffs, void* const* recvbuffs, const size_t* counts, int ntensors,
                              gjDataType_t dtype, gjRedOp_t op, gjComm_t comm, void* stream) {
  return gj::enqueue_blocking(grouped_allreduce_op("gjGroupedAllReduce", sendbuffs, recvbuffs, counts, ntensors, dtype,
                                                   op, {}, stream), comm);
}

gjResult_t gjGroupedAllReduceScaled(const void* const* sendbuffs, void* const* recvbuffs, const size_t* counts,
                                    int ntensors, gjDataType_t dtype, gjRedOp_t op, double prescale, double postscale,
                                    gjComm_t comm, void* stream) {
  return gj::enqueue_blocking(grouped_allreduce_op("gjGroupedAllReduceScaled", sendbuffs, recvbuffs, counts, ntensors,
                                                   dtype, op, Scale{prescale, postscale}, stream), comm);
}

gjResult_t gjIgroupedAllReduce(const void* const* sendbuffs, void* const* recvbuffs, const size_t* counts, int ntensors,
                               gjDataType_t dtype, gjRedOp_t op, double prescale, double postscale, gjComm_t comm,
                               void* stream, gjRequest_t* request) {
  return gj::enqueue_request(grouped_allreduce_op("gjIgroupedAllReduce", sendbuffs, recvbuffs, counts, ntensors, dtype,
                                                  op, Scale{prescale, postscale}, stream), comm, request);
}

gjResult_t gjAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, gjDataType_t dtype, gjComm_t comm,
                       void* stream) {
  return gj::enqueue_blocking(exchange_op("gjAllGather", OpKind::AllGather, sendbuff, recvbuff, sendcount, nullptr,
                                          nullptr, dtype, stream), comm);
}

gjResult_t gjIallGather(const void* sendbuff, void* recvbuff, size_t sendcount, gjDataType_t dtype, gjComm_t comm,
                        void* stream, gjRequest_t* request) {
  return gj::enqueue_request(exchange_op("gjIallGather", OpKind::AllGather, sendbuff, recvbuff, sendcount, nullptr,
                                         nullptr, dtype, stream), comm, request);
}

gjResult_t gjAllGatherV(const void* sendbuff, void* recvbuff, const size_t* recvcounts, gjDataType_t dtype,
                        gjComm_t comm, void* stream) {
  return gj::enqueue_blocking(exchange_op("gjAllGatherV", OpKind::AllGatherV, sendbuff, recvbuff, 0, nullptr,
                                          recvcounts, dtype, stream), comm);
}

gjResult_t gjIallGatherV(const void* sendbuff, void* recvbuff, const size_t* recvcounts, gjDataType_t dtype,
                         gjComm_t comm, void* stream, gjRequest_t* request) {
  return gj::enqueue_request(exchange_op("gjIallGatherV", OpKind::AllGatherV, sendbuff, recvbuff, 0, nullptr,
                                         recvcounts, dtype, stream), comm, request);
}

gjResult_t gjIallGatherVLate(const void* sendbuff, size_t sendcount, gjDataType_t dtype, gjRecvPlan_t plan, void* arg,
                             gjComm_t comm, gjRequest_t* request) {
  return gj::enqueue_request(late_allgather_op("gjIallGatherVLate", sendbuff, sendcount, dtype, plan, arg), comm,
                             request);
}

gjResult_t gjReduceScatter(const void* sendbuff, void* recvbuff, const size_t* recvcounts, gjDataType_t dtype,
                           gjRedOp_t op, double prescale, double postscale, gjComm_t comm, void* stream) {
  return gj::enqueue_blocking(reduce_scatter_op("gjReduceScatter", sendbuff, recvbuff, recvcounts, dtype, op,
                                                Scale{prescale, postscale}, stream), comm);
}

gjResult_t gjIreduceScatter(const void* sendbuff, void* recvbuff, const size_t* recvcounts, gjDataType_t dtype,
                            gjRedOp_t op, double prescale, double postscale, gjComm_t comm, void* stream,
                            gjRequest_t* request) {
  return gj::enqueue_request(reduce_scatter_op("gjIreduceScatter", sendbuff, recvbuff, recvcounts, dtype, op,
                                               Scale{prescale, postscale}, stream), comm, request);
}

gjResult_t gjAllToAllV(const void* sendbuff, const size_t* sendcounts, void* recvbuff, const size_t* recvcounts,
                       gjDataType_t dtype, gjComm_t comm, void* stream) {
  return gj::enqueue_blocking(exchange_op("gjAllToAllV", OpKind::AllToAllV, sendbuff, recvbuff, 0, sendcounts,
                                          recvcounts, dtype, stream), comm);
}

gjResult_t gjIallToAllV(const void* sendbuff, const size_t* sendcounts, void* recvbuff, const size_t* recvcounts,
                        gjDataType_t dtype, gjComm_t comm, void* stream, gjRequest_t* request) {
  return gj::enqueue_request(exchange_op("gjIallToAllV", OpKind::AllToAllV, sendbuff, recvbuff, 0, sendcounts,
                                         recvcounts, dtype, stream), comm, request);
}

gjResult_t gjAllReduceAdasum(const void* sendbuff, void* recvbuff, size_t count, gjDataType_t dtype, gjComm_t comm) {
  return gj::enqueue_blocking(adasum_op("gjAllReduceAdasum", sendbuff, recvbuff, count, dtype), comm);
}

gjResult_t gjIallReduceAdasum(const void* sendbuff, void* recvbuff, size_t count, gjDataType_t dtype, gjComm_t comm,
                              gjRequest_t* request) {
  return gj::enqueue_request(adasum_op("gjIallReduceAdasum", sendbuff, recvbuff, count, dtype), comm, request);
}

gjResult_t gjBarrier(gjComm_t comm) { return gj::enqueue_blocking(make("gjBarrier", OpKind::Barrier), comm); }

gjResult_t gjIbarrier(gjComm_t comm, gjRequest_t* request) {
  return gj::enqueue_request(make("gjIbarrier", OpKind::Barrier), comm, request);
}

}  // extern "C"
