/*
 * gj collectives: gradient allreduce for data-parallel training (C ABI).
 *
 * One opaque communicator, result codes, an error string per code and a last-error message
 * with detail. Device (CUDA) buffers go through NCCL, host buffers through MPI; both give the
 * same results for the same inputs.
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
 * - Grouped allreduce: identical results to one gjAllReduce per tensor (fusion never changes
 *   the arithmetic: every element is still reduced independently in rank order).
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
  gjNumResults = 10
} gjResult_t;

typedef enum gjDataType {
  gjFloat32 = 0,
  gjFloat64 = 1,
  gjFloat16 = 2,  /* IEEE 754 binary16 */
  gjBfloat16 = 3, /* bfloat16 */
  gjInt32 = 4,
  gjInt64 = 5,
  gjUint8 = 6,
  gjNumDataTypes = 7
} gjDataType_t;

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
/* The detail of the last failed call on this thread (e.g. "gjAllReduce: count=-1 ..."),
 * or "" when none. comm may be NULL (calls that failed before a communicator existed). */
const char* gjGetLastError(gjComm_t comm);

/* --- Communicator ----------------------------------------------------------------------- */
/* Initializes MPI (MPI_THREAD_FUNNELED) if the caller has not, and creates a communicator
 * over MPI_COMM_WORLD. Collective over MPI_COMM_WORLD. */
gjResult_t gjCommInitWorld(gjComm_t* comm);
/* Creates a communicator over the caller's MPI communicator; mpi_comm points to an MPI_Comm
 * (passed by address so this header needs no mpi.h). The MPI_Comm is duplicated. Collective. */
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
/* The backend used for buffers of the given kind: is_device != 0 asks about device buffers. */
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
 * reduced on its own. Results identical to per-tensor gjAllReduce. */
gjResult_t gjGroupedAllReduce(const void* const* sendbuffs, void* const* recvbuffs,
                              const size_t* counts, int ntensors, gjDataType_t dtype,
                              gjRedOp_t op, gjComm_t comm, void* stream);

/* Size in bytes of one element, 0 for an invalid dtype. */
size_t gjDataTypeSize(gjDataType_t dtype);

/* Finalizes MPI if gjCommInitWorld initialized it and no communicator is alive. */
gjResult_t gjFinalize(void);

#ifdef __cplusplus
}
#endif

#endif /* GJ_COLLECTIVES_H_ */
