/* A stand-in libnccl.so.2 for the loader tests: exports every name the backend resolves
 * (nccl_loader.h), and ncclGetVersion reports FAKE_NCCL_VERSION. Nothing else works: the
 * tests only load it. FAKE_NCCL_PARTIAL leaves out ncclAllGather (a library lacking a symbol). */
#ifndef FAKE_NCCL_VERSION
#error "define FAKE_NCCL_VERSION (e.g. 22809)"
#endif

int ncclGetVersion(int* version) {
  *version = FAKE_NCCL_VERSION;
  return 0;
}
const char* ncclGetErrorString(int result) {
  (void)result;
  return "fake NCCL";
}
const char* ncclGetLastError(void* comm) {
  (void)comm;
  return "fake NCCL";
}

#define FAKE(name) \
  int name(void) { return 5; /* ncclInvalidUsage */ }
FAKE(ncclGetUniqueId)
FAKE(ncclCommInitRankConfig)
FAKE(ncclCommInitRank)
FAKE(ncclCommFinalize)
FAKE(ncclCommDestroy)
FAKE(ncclCommAbort)
FAKE(ncclCommGetAsyncError)
FAKE(ncclCommCount)
FAKE(ncclCommUserRank)
FAKE(ncclCommCuDevice)
FAKE(ncclCommSplit)
FAKE(ncclRedOpCreatePreMulSum)
FAKE(ncclRedOpDestroy)
FAKE(ncclAllReduce)
FAKE(ncclBroadcast)
FAKE(ncclReduce)
#ifndef FAKE_NCCL_PARTIAL
FAKE(ncclAllGather)
#endif
FAKE(ncclReduceScatter)
FAKE(ncclSend)
FAKE(ncclRecv)
FAKE(ncclGroupStart)
FAKE(ncclGroupEnd)
