/* Calls with out-of-range enum values, made from C as a C caller would make them. In C++ an
 * enum object holding a value outside its range is undefined behaviour (UBSan flags it), so
 * the C++ tests pass plain ints to these C shims instead. */
#ifndef GJ_TESTS_RAW_CALLS_H_
#define GJ_TESTS_RAW_CALLS_H_

#include "gj/collectives.h"

#ifdef __cplusplus
extern "C" {
#endif

gjResult_t raw_allreduce(const void* send, void* recv, size_t count, int dtype, int op, gjComm_t comm);
gjResult_t raw_broadcast(void* buf, size_t count, int dtype, int root, gjComm_t comm);
gjResult_t raw_grouped(const void* const* sends, void* const* recvs, const size_t* counts, int n, int dtype,
                       int op, gjComm_t comm);
const char* raw_error_string(int code);
size_t raw_dtype_size(int dtype);

#ifdef __cplusplus
}
#endif

#endif
