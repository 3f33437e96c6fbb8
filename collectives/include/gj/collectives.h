/*
 * gj collectives: gradient allreduce for data-parallel training (C ABI).
 *
 * One opaque communicator, result codes, an error string per code and a last-error message
 * with detail. Device (CUDA) buffers go through NCCL, host buffers through MPI.
 *
 * Device buffers: the NCCL communicator is created by the first collective with a device buffer
 * (every rank's first), on that buffer's device, so the device may be made current before or
 * after gjCommInit*. Arguments are checked before NCCL sees them (gjInvalidArgument, nothing
 * changed); any error NCCL itself reports is fatal for the communicator's device path: it is
 * aborted, that call returns gjNcclError (or gjTimeout), every later device call gjInvalidUsage
 * naming the cause. Two ranks on one device (NCCL < 2.30) or a rank without NCCL: device
 * buffers return gjUnsupported saying why, host buffers keep working (docs/gpu.md).
 *
 * What is identical between the backends (same inputs, same rank count), bit for bit:
 * broadcast and allgather (copies); every integer reduction; min/max of non-NaN values; float
 * sum/avg/prod on 1 or 2 ranks, and on any rank count when every partial result is exact (e.g.
 * integer-valued inputs within the type's precision); the scaling steps (gjAvg's division
 * before the sum, prescale/postscale), which round the same way on both.
 * What may differ: float sum/avg/prod on 3+ ranks in the last bits (NCCL adds in its ring/tree
 * order, the MPI backend in rank order), and on the NCCL backend also between grouped and
 * per-tensor calls (fusion changes the message size and so NCCL's algorithm); min/max when an
 * operand is NaN (which NaN, or whether NaN wins). docs/gpu.md, "Numerics", has the details.
 *
 * No exception crosses this ABI and no function aborts the process on bad input: every entry
 * point validates its arguments and returns a result code.
 *
 * Semantics shared by both backends
 * - In place when sendbuff == recvbuff.
 * - count is an element count. Counts whose byte size overflows (what a negative count
 *   passed through a signed->size_t conversion becomes) are rejected with gjInvalidArgument.
 * - gjAvg on floating types: each rank's contribution is divided by the rank count before the
 *   sum ("divide-then-sum"); this cannot overflow f16 where sum-then-divide would, at the cost
 *   of underflow for values below size * the smallest subnormal.
 * - gjAvg on integer types: the exact sum divided by the rank count, truncated toward zero
 *   (C integer division), computed in the type's width (the sum may wrap like C unsigned math).
 * - gjFloat16 / gjBfloat16: every reduction step accumulates in f32 and rounds the result to
 *   nearest-even into the 16-bit type.
 * - Grouped allreduce: identical results to one gjAllReduce per tensor on host buffers (every
 *   element is still reduced independently in rank order); on device buffers within the limits
 *   stated above.
 */
#ifndef GJ_COLLECTIVES_H_
#define GJ_COLLECTIVES_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GJ_COLLECTIVES_VERSION_MAJOR 0
#define GJ_COLLECTIVES_VERSION_MINOR 1

typedef struct gjComm* gjComm_t;

typedef enum gjResult {
  gjSuccess = 0,
  gjInvalidArgument = 1, /* a null pointer, a bad count, dtype, op or root */
  gjInvalidUsage = 2,    /* call after destroy/abort, mismatched counts across ranks, ... */
  gjUnsupported = 3,     /* valid request this build or backend cannot do (e.g. device buffer, no NCCL) */
  gjSystemError = 4,     /* an OS call failed (shared memory, allocation) */
  gjMpiError = 5,        /* an MPI call failed */
  gjNcclError = 6,       /* an NCCL call failed or reported an asynchronous error */
  gjCudaError = 7,       /* a CUDA runtime call failed */
  gjTimeout = 8,         /* an operation did not complete within GJ_COLL_TIMEOUT_MS */
  gjInternalError = 9,   /* a bug in this library */
  gjPeerLost = 10,       /* a rank of the communicator left the job (exited, died, its pod was lost);
                            gjGetLastError names its world rank, host and why */
  gjNumResults = 11
} gjResult_t;

typedef enum gjDataType {
  gjFloat32 = 0,
  gjFloat64 = 1,
  gjFloat16 = 2,  /* IEEE 754 binary16 */
  gjBfloat16 = 3, /* bfloat16 */
  gjInt32 = 4,
  gjInt64 = 5,
  gjUint8 = 6,
  /* Data movement only (broadcast, allgather): reductions reject them with gjUnsupported. */
  gjInt8 = 7,
  gjInt16 = 8,
  gjBool = 9,  /* one byte per element */
  gjByte = 10, /* raw bytes: any element type, count in bytes */
  gjNumDataTypes = 11
} gjDataType_t;

/* The reducible dtypes are 0 .. gjNumReducibleDataTypes-1. */
#define gjNumReducibleDataTypes 7

typedef enum gjRedOp {
  gjSum = 0,
  gjAvg = 1,
  gjMin = 2,
  gjMax = 3,
  gjProd = 4,
  gjNumRedOps = 5
} gjRedOp_t;

typedef enum gjBackend {
  gjBackendMpi = 0,  /* host buffers, MPI (with an intra-node shared-memory path) */
  gjBackendNccl = 1  /* device buffers, NCCL */
} gjBackend_t;

/* --- Errors ----------------------------------------------------------------------------- */
/* A static string naming the code, e.g. "invalid argument". Never NULL. */
const char* gjGetErrorString(gjResult_t result);
/* The detail of a failed call (e.g. "gjAllReduce: count=-1 ..."), or "" when none. With a
 * live comm: the last failed call on comm, from any thread; otherwise (comm NULL, destroyed
 * or never created): the last failed call of this thread. The text is a copy owned by the
 * calling thread: it stays valid, whatever other threads do, until this thread's next
 * gjGetLastError or next failing gj call. */
const char* gjGetLastError(gjComm_t comm);

/* --- Communicator ----------------------------------------------------------------------- */
/* Initializes MPI (MPI_THREAD_MULTIPLE: host requests run on a progress thread) if the caller
 * has not, and creates a communicator
 * over MPI_COMM_WORLD. Collective over MPI_COMM_WORLD. */
gjResult_t gjCommInitWorld(gjComm_t* comm);
/* Creates a communicator over the caller's MPI communicator; mpi_comm points to an MPI_Comm
 * (passed by address so this header needs no mpi.h). The MPI_Comm is duplicated. Collective.
 * Nonblocking host operations need MPI initialized with MPI_THREAD_MULTIPLE; with less they
 * return gjInvalidUsage naming the level provided (blocking calls work at any level). */
gjResult_t gjCommInitMpi(gjComm_t* comm, const void* mpi_comm);
/* Collective; frees everything. The handle is invalid afterwards. */
gjResult_t gjCommDestroy(gjComm_t comm);
/* Error path: tears down the communicator without waiting for peers (ncclCommAbort /
 * MPI_Abort semantics are NOT implied: the process is not killed). Frees the handle. */
gjResult_t gjCommAbort(gjComm_t comm);

gjResult_t gjCommRank(gjComm_t comm, int* rank);
gjResult_t gjCommSize(gjComm_t comm, int* size);
gjResult_t gjCommLocalRank(gjComm_t comm, int* local_rank); /* rank among ranks on this node */
gjResult_t gjCommLocalSize(gjComm_t comm, int* local_size);
/* The backend used for buffers of the given kind: is_device != 0 asks about device buffers
 * (gjBackendNccl until the first device collective finds NCCL unusable, see the top). */
gjResult_t gjCommBackend(gjComm_t comm, int is_device, gjBackend_t* backend);

/* Fusion buffer size for gjGroupedAllReduce in bytes; default from GJ_COLL_FUSION_BYTES.
 * 0 disables fusion (one collective per tensor). */
gjResult_t gjCommSetFusionThreshold(gjComm_t comm, size_t bytes);
gjResult_t gjCommGetFusionThreshold(gjComm_t comm, size_t* bytes);

/* --- Collectives ------------------------------------------------------------------------ */
/* stream: a cudaStream_t for device buffers (NULL = default stream), ignored for host buffers.
 * Device calls are stream-ordered: they return once the work is enqueued. Host calls return
 * when the result is in recvbuff. */
gjResult_t gjAllReduce(const void* sendbuff, void* recvbuff, size_t count, gjDataType_t dtype,
                       gjRedOp_t op, gjComm_t comm, void* stream);

gjResult_t gjBroadcast(void* buff, size_t count, gjDataType_t dtype, int root, gjComm_t comm,
                       void* stream);

/* ntensors tensors of one dtype, reduced with one op. sendbuffs[i] == recvbuffs[i] is in place.
 * Tensors are packed into the fusion buffer in order; a tensor larger than the threshold is
 * reduced on its own. Results identical to per-tensor gjAllReduce (device buffers: see the top). */
gjResult_t gjGroupedAllReduce(const void* const* sendbuffs, void* const* recvbuffs,
                              const size_t* counts, int ntensors, gjDataType_t dtype,
                              gjRedOp_t op, gjComm_t comm, void* stream);

/* Reductions with scaling (Horovod's prescale_factor / postscale_factor): every rank's input
 * is multiplied by prescale before the reduction and the result by postscale after it, inside
 * the operation (no extra pass by the caller). f16/bf16 are scaled in f32, f32 in f32, f64 and
 * integers in f64 (integers then truncated toward zero, saturated to the type's range).
 * 1.0 / 1.0 is gjAllReduce exactly; factors must be finite. gjAvg on floating types folds its
 * division into the prescale multiply (each contribution is x * (prescale / size)); gjAvg on
 * integers divides the exact sum of the scaled contributions, then postscale applies. */
gjResult_t gjAllReduceScaled(const void* sendbuff, void* recvbuff, size_t count, gjDataType_t dtype,
                             gjRedOp_t op, double prescale, double postscale, gjComm_t comm,
                             void* stream);
gjResult_t gjGroupedAllReduceScaled(const void* const* sendbuffs, void* const* recvbuffs,
                                    const size_t* counts, int ntensors, gjDataType_t dtype,
                                    gjRedOp_t op, double prescale, double postscale, gjComm_t comm,
                                    void* stream);

/* Allgather, equal counts: every rank sends sendcount elements; recvbuff holds
 * size * sendcount elements, rank r's at offset r * sendcount. Every dtype (gjByte included).
 * In place when sendbuff is this rank's block of recvbuff (also for gjAllGatherV). */
gjResult_t gjAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, gjDataType_t dtype,
                       gjComm_t comm, void* stream);
/* Allgather, per-rank counts: rank r sends recvcounts[r] elements (zero allowed); recvbuff holds
 * their sum, concatenated in rank order. recvcounts has size entries, the same on every rank. */
gjResult_t gjAllGatherV(const void* sendbuff, void* recvbuff, const size_t* recvcounts,
                        gjDataType_t dtype, gjComm_t comm, void* stream);
/* Reduce-scatter, per-rank counts: sendbuff holds sum(recvcounts) elements on every rank; rank r
 * receives the reduction of its slice [sum(recvcounts[0..r)), + recvcounts[r]) in recvbuff.
 * Reducible dtypes and every op; gjAvg, f16/bf16 and scaling as for gjAllReduceScaled.
 * In place when recvbuff is this rank's slice of sendbuff. */
gjResult_t gjReduceScatter(const void* sendbuff, void* recvbuff, const size_t* recvcounts,
                           gjDataType_t dtype, gjRedOp_t op, double prescale, double postscale,
                           gjComm_t comm, void* stream);
/* Alltoall, per-peer counts (Horovod's alltoall with splits): this rank sends sendcounts[q]
 * elements to rank q, the block at element offset sendcounts[0] + ... + sendcounts[q-1] of
 * sendbuff, and receives recvcounts[q] elements from rank q into the block at the same kind of
 * offset of recvbuff. Both arrays have size entries (zero allowed); recvcounts[q] must equal
 * what rank q passes as its sendcounts for this rank: with the agreement check on (GJ_COLL_CHECK,
 * gjCommSetCheck) a disagreeing pair fails the call with gjInvalidUsage on every rank, naming the
 * pair. A caller that knows only its send counts learns its receive counts with an alltoall of
 * the counts themselves (sendcounts = recvcounts = all 1, dtype gjInt64). Every dtype; not in
 * place (sendbuff == recvbuff is gjInvalidArgument). Host buffers: MPI_Alltoallv (a pairwise
 * exchange beyond int byte counts); device buffers: ncclSend/ncclRecv in one group. */
gjResult_t gjAllToAllV(const void* sendbuff, const size_t* sendcounts, void* recvbuff,
                       const size_t* recvcounts, gjDataType_t dtype, gjComm_t comm, void* stream);
/* Adasum (Horovod's op=Adasum): recvbuff = the adaptive sum of every rank's sendbuff, combined
 * pairwise as Adasum(a, b) = (1 - a.b / 2|a|^2) a + (1 - a.b / 2|b|^2) b over the whole buffer
 * (one tensor), in the binary tree of ranks (0,1), (2,3), ..., then pairs of pairs, by vector
 * halving and distance doubling over MPI. The same bits on every rank. f32, f64, f16, bf16
 * (f16/bf16 combined in f32, rounded once); host buffers only (device buffers: gjUnsupported,
 * copy them to host memory); the communicator's size must be a power of two (else
 * gjUnsupported naming it). In place when sendbuff == recvbuff. */
gjResult_t gjAllReduceAdasum(const void* sendbuff, void* recvbuff, size_t count, gjDataType_t dtype,
                             gjComm_t comm);
/* Host-side barrier over the communicator (waits for this communicator's queued requests). */
gjResult_t gjBarrier(gjComm_t comm);

/* --- Sub-communicators -------------------------------------------------------------------- */
/* Collective over comm: ranks passing the same color >= 0 form a new communicator, ordered by
 * key (then by rank in comm); color < 0 returns *newcomm = NULL. Settings are inherited. */
gjResult_t gjCommSplit(gjComm_t comm, int color, int key, gjComm_t* newcomm);
/* Turns the cross-rank agreement check (GJ_COLL_CHECK) on or off for every later call, the
 * grouped allreduce's check of its tensor list included (on by default): off is for callers
 * that guarantee matching calls themselves. Every rank must switch at the same point of its
 * call sequence. */
gjResult_t gjCommSetCheck(gjComm_t comm, int enabled);

/* --- Nonblocking operations --------------------------------------------------------------- */
/* Each collective above has a form that returns at once with a request. Arrays (counts,
 * buffer lists) are copied at the call; the buffers themselves must stay valid and untouched
 * until the request completes.
 * - Device buffers: the work is enqueued on `stream` as by the blocking call; the request
 *   completes when that work has (an event).
 * - Host buffers: the work runs on the communicator's progress thread, in the order the
 *   requests were issued; blocking calls on the same communicator run after every earlier
 *   request. Hundreds of requests may be in flight; queued requests of one kind, dtype and op
 *   may be fused, with results identical to running them one by one.
 * A request is completed by gjWait, or by gjTest reporting done; either frees it, and its
 * handle is then invalid (gjInvalidUsage). A failed operation fails its request with the
 * cause; every later request of the communicator then fails with that cause, and the
 * communicator refuses new work until it is destroyed. */
typedef struct gjRequest* gjRequest_t;

gjResult_t gjIallReduce(const void* sendbuff, void* recvbuff, size_t count, gjDataType_t dtype,
                        gjRedOp_t op, double prescale, double postscale, gjComm_t comm,
                        void* stream, gjRequest_t* request);
gjResult_t gjIgroupedAllReduce(const void* const* sendbuffs, void* const* recvbuffs,
                               const size_t* counts, int ntensors, gjDataType_t dtype,
                               gjRedOp_t op, double prescale, double postscale, gjComm_t comm,
                               void* stream, gjRequest_t* request);
gjResult_t gjIbroadcast(void* buff, size_t count, gjDataType_t dtype, int root, gjComm_t comm,
                        void* stream, gjRequest_t* request);
gjResult_t gjIallGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                        gjDataType_t dtype, gjComm_t comm, void* stream, gjRequest_t* request);
gjResult_t gjIallGatherV(const void* sendbuff, void* recvbuff, const size_t* recvcounts,
                         gjDataType_t dtype, gjComm_t comm, void* stream, gjRequest_t* request);
gjResult_t gjIreduceScatter(const void* sendbuff, void* recvbuff, const size_t* recvcounts,
                            gjDataType_t dtype, gjRedOp_t op, double prescale, double postscale,
                            gjComm_t comm, void* stream, gjRequest_t* request);
gjResult_t gjIallToAllV(const void* sendbuff, const size_t* sendcounts, void* recvbuff,
                        const size_t* recvcounts, gjDataType_t dtype, gjComm_t comm, void* stream,
                        gjRequest_t* request);
gjResult_t gjIallReduceAdasum(const void* sendbuff, void* recvbuff, size_t count, gjDataType_t dtype,
                              gjComm_t comm, gjRequest_t* request);
gjResult_t gjIbarrier(gjComm_t comm, gjRequest_t* request);

/* An allgather whose receive side is known only when it runs: when every earlier request of
 * comm is done, the progress thread calls plan(arg, recvcounts, &recvbuff), which fills
 * recvcounts[0..size) (this rank's entry must equal sendcount) and sets recvbuff to host memory
 * for their sum, and returns 0; nonzero skips the request, which then completes with gjSuccess
 * and moves nothing (every rank must skip it, as plans deciding from the same earlier result
 * do, or the others wait for this one). The counts may come from an earlier request of comm
 * (gj.torch: an allreduce of every rank's row count), complete by then. Host buffers only
 * (device: gjUnsupported). */
typedef int (*gjRecvPlan_t)(void* arg, size_t* recvcounts, void** recvbuff);
gjResult_t gjIallGatherVLate(const void* sendbuff, size_t sendcount, gjDataType_t dtype, gjRecvPlan_t plan,
                             void* arg, gjComm_t comm, gjRequest_t* request);

/* The control channel: a MAX allreduce of count int64 values in place, on an MPI communicator
 * of the communicator's own that carries nothing else. Control calls are ordered among
 * themselves, not with comm's collectives, so one completes while this rank's nonblocking
 * collectives still wait for their peers (gj.torch's barrier: Horovod's barrier does not wait
 * for the collectives in flight). gjTest polls it without a bound (MPI progresses it only while
 * some call polls); gjWait gives up after GJ_COLL_TIMEOUT_MS with gjTimeout, after which the
 * channel is stopped (a nonblocking collective cannot be cancelled) and later control calls
 * fail. The result is written to values when gjTest or gjWait reports completion; values must
 * stay valid until then. 1 <= count <= 2^20. Needs MPI_THREAD_MULTIPLE. */
gjResult_t gjIcontrolMax(int64_t* values, size_t count, gjComm_t comm, gjRequest_t* request);

/* The job's stop request, agreed on: *stop = 1 on every rank of comm when at least one of them
 * has been asked to stop (the master's `stop` after its pod got SIGTERM, passed on by each
 * rank's wrapper; docs/agent.md "Restarts and stops"), else 0 on every rank. Collective: every
 * rank of comm calls it at the same point of its control calls (one 8-byte MAX allreduce on the
 * control channel, as gjIcontrolMax; not while a rank of comm is inside join()). Blocks until
 * every rank has called it, up to GJ_COLL_TIMEOUT_MS (gjTimeout). The first call also tells this
 * rank's wrapper that the program polls for the request, so that the master gives it
 * GJ_STOP_GRACE seconds to save and leave. Without gj-mpirun's wrapper: always 0. */
gjResult_t gjStopRequested(gjComm_t comm, int* stop);

/* *done = 1 when the request has completed (it is then freed and the operation's result is
 * returned), 0 when not yet (gjSuccess). Never blocks. */
gjResult_t gjTest(gjRequest_t request, int* done);
/* Blocks until the request completes, frees it, returns the operation's result. */
gjResult_t gjWait(gjRequest_t request);

/* --- Capabilities -------------------------------------------------------------------------- */
/* Bit set of what this build of the library can do: gjCapNccl when built with the NCCL
 * backend (loaded at run time), gjCapCuda when built with CUDA kernels. */
#define gjCapCuda 1
#define gjCapNccl 2
int gjBuildCapabilities(void);
/* The version (NCCL_VERSION_CODE form, e.g. 22809 for 2.28.9) of the NCCL library the device
 * backend loads, searched as a communicator's first device collective searches
 * (GJ_NCCL_LIBRARY, then the site folders; docs/gpu.md) and cached for the process.
 * gjUnsupported, *version = 0 and the search's reasons in gjGetLastError(NULL) when none
 * loads or the build has no NCCL backend. Needs no MPI and no communicator. */
gjResult_t gjNcclVersion(int* version);

/* The number of CUDA devices the library's own CUDA runtime can use (0 without CUDA, driver or
 * device). gjCudaError, with *count = 0 and gjGetLastError(NULL) naming the runtime's and the
 * driver's CUDA versions and the fix, where a driver is installed that the library's runtime
 * cannot use (e.g. a driver older than the toolkit gj was built with): device buffers then fail
 * with that error instead of being read as host memory. Needs no MPI and no communicator. */
gjResult_t gjCudaDevices(int* count);

/* Size in bytes of one element, 0 for an invalid dtype. */
size_t gjDataTypeSize(gjDataType_t dtype);

/* Finalizes MPI if gjCommInitWorld initialized it and no communicator is alive. */
gjResult_t gjFinalize(void);

#ifdef __cplusplus
}
#endif

#endif /* GJ_COLLECTIVES_H_ */
