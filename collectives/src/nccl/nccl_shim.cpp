// The NCCL functions the backend calls, defined here as forwarders into the library that
// nccl_loader.cpp opened, so nothing links libnccl. Declared hidden (the pragma around nccl.h):
// libgj_collectives.so neither exports ncclXxx (a program's own NCCL, e.g. torch's, keeps its
// names) nor binds to another library's. A call before a successful load searches first; when
// no NCCL was found it fails with ncclSystemError and ncclGetLastError() names the search.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <limits.h>

#pragma GCC visibility push(hidden)
#include <nccl.h>
#pragma GCC visibility pop

#include "nccl_loader.h"

namespace {

const gj::nccl::Api* api() {
  const gj::nccl::Library& lib = gj::nccl::library();
  return lib.ok ? &lib.api : nullptr;
}

}  // namespace

// Forwards a call returning ncclResult_t; a missing optional function is ncclInvalidUsage.
#define GJ_FORWARD(name, ...)                          \
  const gj::nccl::Api* a = api();                      \
  if (a == nullptr) return ncclSystemError;            \
  if (a->name == nullptr) return ncclInvalidUsage;     \
  return a->name(__VA_ARGS__)

extern "C" {

ncclResult_t ncclGetVersion(int* version) { GJ_FORWARD(ncclGetVersion, version); }

const char* ncclGetErrorString(ncclResult_t result) {
  const gj::nccl::Api* a = api();
  return a != nullptr ? a->ncclGetErrorString(result) : "NCCL is not loaded";
}

const char* ncclGetLastError(ncclComm_t comm) {
  const gj::nccl::Api* a = api();
  return a != nullptr ? a->ncclGetLastError(comm) : gj::nccl::library().error.c_str();
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) { GJ_FORWARD(ncclGetUniqueId, id); }

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
  GJ_FORWARD(ncclCommInitRankConfig, comm, nranks, id, rank, config);
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  GJ_FORWARD(ncclCommInitRank, comm, nranks, id, rank);
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) { GJ_FORWARD(ncclCommFinalize, comm); }
ncclResult_t ncclCommDestroy(ncclComm_t comm) { GJ_FORWARD(ncclCommDestroy, comm); }
ncclResult_t ncclCommAbort(ncclComm_t comm) { GJ_FORWARD(ncclCommAbort, comm); }

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
  GJ_FORWARD(ncclCommGetAsyncError, comm, async_error);
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) { GJ_FORWARD(ncclCommCount, comm, count); }
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) { GJ_FORWARD(ncclCommUserRank, comm, rank); }
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) { GJ_FORWARD(ncclCommCuDevice, comm, device); }

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  GJ_FORWARD(ncclCommSplit, comm, color, key, newcomm, config);
}

ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm) {
  GJ_FORWARD(ncclRedOpCreatePreMulSum, op, scalar, datatype, residence, comm);
}

ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) { GJ_FORWARD(ncclRedOpDestroy, op, comm); }

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  GJ_FORWARD(ncclAllReduce, sendbuff, recvbuff, count, datatype, op, comm, stream);
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  GJ_FORWARD(ncclBroadcast, sendbuff, recvbuff, count, datatype, root, comm, stream);
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  GJ_FORWARD(ncclReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  GJ_FORWARD(ncclAllGather, sendbuff, recvbuff, sendcount, datatype, comm, stream);
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  GJ_FORWARD(ncclReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, comm, stream);
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  GJ_FORWARD(ncclSend, sendbuff, count, datatype, peer, comm, stream);
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  GJ_FORWARD(ncclRecv, recvbuff, count, datatype, peer, comm, stream);
}

ncclResult_t ncclGroupStart() {
  const gj::nccl::Api* a = api();
  return a != nullptr ? a->ncclGroupStart() : ncclSystemError;
}

ncclResult_t ncclGroupEnd() {
  const gj::nccl::Api* a = api();
  return a != nullptr ? a->ncclGroupEnd() : ncclSystemError;
}

}  // extern "C"
