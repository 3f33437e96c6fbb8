#include "raw_calls.h"

gjResult_t raw_allreduce(const void* send, void* recv, size_t count, int dtype, int op, gjComm_t comm) {
  return gjAllReduce(send, recv, count, (gjDataType_t)dtype, (gjRedOp_t)op, comm, NULL);
}

gjResult_t raw_broadcast(void* buf, size_t count, int dtype, int root, gjComm_t comm) {
  return gjBroadcast(buf, count, (gjDataType_t)dtype, root, comm, NULL);
}

gjResult_t raw_grouped(const void* const* sends, void* const* recvs, const size_t* counts, int n, int dtype,
                       int op, gjComm_t comm) {
  return gjGroupedAllReduce(sends, recvs, counts, n, (gjDataType_t)dtype, (gjRedOp_t)op, comm, NULL);
}

const char* raw_error_string(int code) { return gjGetErrorString((gjResult_t)code); }

size_t raw_dtype_size(int dtype) { return gjDataTypeSize((gjDataType_t)dtype); }
