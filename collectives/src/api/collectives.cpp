// The collective entry points (NCCL's collectives.cc): each fills one Op (op.h) and calls
// enqueue(); validation is op_check.cpp's, issuing enqueue.cpp's. The enums are copied as
// raw bits (enum_bits): a C caller's out-of-range value must not be loaded as the C++ enum.
#include "gj/collectives.h"

#include "api/op.h"
#include "dtype.h"

namespace {

gj::Op make(const char* call, gj::OpKind kind) {
  gj::Op o;
  o.call = call;
  o.kind = kind;
  return o;
}

}  // namespace

extern "C" {

gjResult_t gjAllReduce(const void* sendbuff, void* recvbuff, size_t count, gjDataType_t dtype, gjRedOp_t op,
                       gjComm_t comm, void* stream) {
  gj::Op o = make("gjAllReduce", gj::OpKind::AllReduce);
  o.sendbuff = sendbuff;
  o.recvbuff = recvbuff;
  o.count = count;
  o.dtype_bits = gj::enum_bits(dtype);
  o.op_bits = gj::enum_bits(op);
  o.stream = stream;
  return gj::enqueue_blocking(o, comm);
}

gjResult_t gjAllReduceScaled(const void* sendbuff, void* recvbuff, size_t count, gjDataType_t dtype, gjRedOp_t op,
                             double prescale, double postscale, gjComm_t comm, void* stream) {
  gj::Op o = make("gjAllReduceScaled", gj::OpKind::AllReduce);
  o.sendbuff = sendbuff;
  o.recvbuff = recvbuff;
  o.count = count;
  o.dtype_bits = gj::enum_bits(dtype);
  o.op_bits = gj::enum_bits(op);
  o.scale = gj::Scale{prescale, postscale};
  o.stream = stream;
  return gj::enqueue_blocking(o, comm);
}

gjResult_t gjIallReduce(const void* sendbuff, void* recvbuff, size_t count, gjDataType_t dtype, gjRedOp_t op,
                        double prescale, double postscale, gjComm_t comm, void* stream, gjRequest_t* request) {
  gj::Op o = make("gjIallReduce", gj::OpKind::AllReduce);
  o.sendbuff = sendbuff;
  o.recvbuff = recvbuff;
  o.count = count;
  o.dtype_bits = gj::enum_bits(dtype);
  o.op_bits = gj::enum_bits(op);
  o.scale = gj::Scale{prescale, postscale};
  o.stream = stream;
  return gj::enqueue_request(o, comm, request);
}

gjResult_t gjBroadcast(void* buff, size_t count, gjDataType_t dtype, int root, gjComm_t comm, void* stream) {
  gj::Op o = make("gjBroadcast", gj::OpKind::Broadcast);
  o.recvbuff = buff;
  o.count = count;
  o.dtype_bits = gj::enum_bits(dtype);
  o.root = root;
  o.stream = stream;
  return gj::enqueue_blocking(o, comm);
}

gjResult_t gjIbroadcast(void* buff, size_t count, gjDataType_t dtype, int root, gjComm_t comm, void* stream,
                        gjRequest_t* request) {
  gj::Op o = make("gjIbroadcast", gj::OpKind::Broadcast);
  o.recvbuff = buff;
  o.count = count;
  o.dtype_bits = gj::enum_bits(dtype);
  o.root = root;
  o.stream = stream;
  return gj::enqueue_request(o, comm, request);
}

gjResult_t gjGroupedAllReduce(const void* const* sendbuffs, void* const* recvbuffs, const size_t* counts, int ntensors,
                              gjDataType_t dtype, gjRedOp_t op, gjComm_t comm, void* stream) {
  gj::Op o = make("gjGroupedAllReduce", gj::OpKind::GroupedAllReduce);
  o.sendbuffs = sendbuffs;
  o.recvbuffs = recvbuffs;
  o.counts = counts;
  o.ntensors = ntensors;
  o.dtype_bits = gj::enum_bits(dtype);
  o.op_bits = gj::enum_bits(op);
  o.stream = stream;
  return gj::enqueue_blocking(o, comm);
}

gjResult_t gjGroupedAllReduceScaled(const void* const* sendbuffs, void* const* recvbuffs, const size_t* counts,
                                    int ntensors, gjDataType_t dtype, gjRedOp_t op, double prescale, double postscale,
                                    gjComm_t comm, void* stream) {
  gj::Op o = make("gjGroupedAllReduceScaled", gj::OpKind::GroupedAllReduce);
  o.sendbuffs = sendbuffs;
  o.recvbuffs = recvbuffs;
  o.counts = counts;
  o.ntensors = ntensors;
  o.dtype_bits = gj::enum_bits(dtype);
  o.op_bits = gj::enum_bits(op);
  o.scale = gj::Scale{prescale, postscale};
  o.stream = stream;
  return gj::enqueue_blocking(o, comm);
}

gjResult_t gjIgroupedAllReduce(const void* const* sendbuffs, void* const* recvbuffs, const size_t* counts, int ntensors,
                               gjDataType_t dtype, gjRedOp_t op, double prescale, double postscale, gjComm_t comm,
                               void* stream, gjRequest_t* request) {
  gj::Op o = make("gjIgroupedAllReduce", gj::OpKind::GroupedAllReduce);
  o.sendbuffs = sendbuffs;
  o.recvbuffs = recvbuffs;
  o.counts = counts;
  o.ntensors = ntensors;
  o.dtype_bits = gj::enum_bits(dtype);
  o.op_bits = gj::enum_bits(op);
  o.scale = gj::Scale{prescale, postscale};
  o.stream = stream;
  return gj::enqueue_request(o, comm, request);
}

gjResult_t gjAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, gjDataType_t dtype, gjComm_t comm,
                       void* stream) {
  gj::Op o = make("gjAllGather", gj::OpKind::AllGather);
  o.sendbuff = sendbuff;
  o.recvbuff = recvbuff;
  o.count = sendcount;
  o.dtype_bits = gj::enum_bits(dtype);
  o.stream = stream;
  return gj::enqueue_blocking(o, comm);
}

gjResult_t gjIallGather(const void* sendbuff, void* recvbuff, size_t sendcount, gjDataType_t dtype, gjComm_t comm,
                        void* stream, gjRequest_t* request) {
  gj::Op o = make("gjIallGather", gj::OpKind::AllGather);
  o.sendbuff = sendbuff;
  o.recvbuff = recvbuff;
  o.count = sendcount;
  o.dtype_bits = gj::enum_bits(dtype);
  o.stream = stream;
  return gj::enqueue_request(o, comm, request);
}

gjResult_t gjAllGatherV(const void* sendbuff, void* recvbuff, const size_t* recvcounts, gjDataType_t dtype,
                        gjComm_t comm, void* stream) {
  gj::Op o = make("gjAllGatherV", gj::OpKind::AllGatherV);
  o.sendbuff = sendbuff;
  o.recvbuff = recvbuff;
  o.recvcounts = recvcounts;
  o.dtype_bits = gj::enum_bits(dtype);
  o.stream = stream;
  return gj::enqueue_blocking(o, comm);
}

gjResult_t gjIallGatherV(const void* sendbuff, void* recvbuff, const size_t* recvcounts, gjDataType_t dtype,
                         gjComm_t comm, void* stream, gjRequest_t* request) {
  gj::Op o = make("gjIallGatherV", gj::OpKind::AllGatherV);
  o.sendbuff = sendbuff;
  o.recvbuff = recvbuff;
  o.recvcounts = recvcounts;
  o.dtype_bits = gj::enum_bits(dtype);
  o.stream = stream;
  return gj::enqueue_request(o, comm, request);
}

gjResult_t gjIallGatherVLate(const void* sendbuff, size_t sendcount, gjDataType_t dtype, gjRecvPlan_t plan, void* arg,
                             gjComm_t comm, gjRequest_t* request) {
  gj::Op o = make("gjIallGatherVLate", gj::OpKind::AllGatherVLate);
  o.sendbuff = sendbuff;
  o.count = sendcount;
  o.dtype_bits = gj::enum_bits(dtype);
  o.plan = plan;
  o.plan_arg = arg;
  return gj::enqueue_request(o, comm, request);
}

gjResult_t gjReduceScatter(const void* sendbuff, void* recvbuff, const size_t* recvcounts, gjDataType_t dtype,
                           gjRedOp_t op, double prescale, double postscale, gjComm_t comm, void* stream) {
  gj::Op o = make("gjReduceScatter", gj::OpKind::ReduceScatter);
  o.sendbuff = sendbuff;
  o.recvbuff = recvbuff;
  o.recvcounts = recvcounts;
  o.dtype_bits = gj::enum_bits(dtype);
  o.op_bits = gj::enum_bits(op);
  o.scale = gj::Scale{prescale, postscale};
  o.stream = stream;
  return gj::enqueue_blocking(o, comm);
}

gjResult_t gjIreduceScatter(const void* sendbuff, void* recvbuff, const size_t* recvcounts, gjDataType_t dtype,
                            gjRedOp_t op, double prescale, double postscale, gjComm_t comm, void* stream,
                            gjRequest_t* request) {
  gj::Op o = make("gjIreduceScatter", gj::OpKind::ReduceScatter);
  o.sendbuff = sendbuff;
  o.recvbuff = recvbuff;
  o.recvcounts = recvcounts;
  o.dtype_bits = gj::enum_bits(dtype);
  o.op_bits = gj::enum_bits(op);
  o.scale = gj::Scale{prescale, postscale};
  o.stream = stream;
  return gj::enqueue_request(o, comm, request);
}

gjResult_t gjAllToAllV(const void* sendbuff, const size_t* sendcounts, void* recvbuff, const size_t* recvcounts,
                       gjDataType_t dtype, gjComm_t comm, void* stream) {
  gj::Op o = make("gjAllToAllV", gj::OpKind::AllToAllV);
  o.sendbuff = sendbuff;
  o.sendcounts = sendcounts;
  o.recvbuff = recvbuff;
  o.recvcounts = recvcounts;
  o.dtype_bits = gj::enum_bits(dtype);
  o.stream = stream;
  return gj::enqueue_blocking(o, comm);
}

gjResult_t gjIallToAllV(const void* sendbuff, const size_t* sendcounts, void* recvbuff, const size_t* recvcounts,
                        gjDataType_t dtype, gjComm_t comm, void* stream, gjRequest_t* request) {
  gj::Op o = make("gjIallToAllV", gj::OpKind::AllToAllV);
  o.sendbuff = sendbuff;
  o.sendcounts = sendcounts;
  o.recvbuff = recvbuff;
  o.recvcounts = recvcounts;
  o.dtype_bits = gj::enum_bits(dtype);
  o.stream = stream;
  return gj::enqueue_request(o, comm, request);
}

gjResult_t gjAllReduceAdasum(const void* sendbuff, void* recvbuff, size_t count, gjDataType_t dtype, gjComm_t comm) {
  gj::Op o = make("gjAllReduceAdasum", gj::OpKind::Adasum);
  o.sendbuff = sendbuff;
  o.recvbuff = recvbuff;
  o.count = count;
  o.dtype_bits = gj::enum_bits(dtype);
  return gj::enqueue_blocking(o, comm);
}

gjResult_t gjIallReduceAdasum(const void* sendbuff, void* recvbuff, size_t count, gjDataType_t dtype, gjComm_t comm,
                              gjRequest_t* request) {
  gj::Op o = make("gjIallReduceAdasum", gj::OpKind::Adasum);
  o.sendbuff = sendbuff;
  o.recvbuff = recvbuff;
  o.count = count;
  o.dtype_bits = gj::enum_bits(dtype);
  return gj::enqueue_request(o, comm, request);
}

gjResult_t gjBarrier(gjComm_t comm) {
  gj::Op o = make("gjBarrier", gj::OpKind::Barrier);
  return gj::enqueue_blocking(o, comm);
}

gjResult_t gjIbarrier(gjComm_t comm, gjRequest_t* request) {
  gj::Op o = make("gjIbarrier", gj::OpKind::Barrier);
  return gj::enqueue_request(o, comm, request);
}

}  // extern "C"
