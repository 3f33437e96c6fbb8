// Argument checks of the C entry points, in one place. Pure: each throws gj::Error
// (gjInvalidArgument) with a message naming the call, the argument and the value seen.
#pragma once

#include <cstddef>

#include "gj/collectives.h"

namespace gj::validate {

// Raw int values: an out-of-range value a C caller passes must not be read as a C++ enum
// (undefined behaviour); the entry points copy the bits out (enum_bits) before checking.
void dtype(const char* call, int dtype);
void op(const char* call, int op);
// A valid dtype that the reductions know; gjUnsupported (naming call and dtype) for the
// data-movement dtypes (i8, i16, bool, byte).
void reducible(const char* call, gjDataType_t dtype);
// Scaling factors must be finite (NaN or infinity would poison every element).
void scale(const char* call, double prescale, double postscale);
// The byte size of count elements; rejects sizes no object can have (> PTRDIFF_MAX), which is
// what a negative count converted to size_t becomes.
std::size_t bytes(const char* call, const char* count_name, std::size_t count, gjDataType_t dtype);
// A null pointer is an error only when count > 0 elements are to be read or written.
void buffer(const char* call, const char* name, const void* p, std::size_t count);
void out_pointer(const char* call, const char* name, const void* p);
void root(const char* call, int root, int size);

// A per-rank count array of `size` entries (not NULL when size > 0), each a valid byte size,
// their sum too; returns the sum in elements.
std::size_t rank_counts(const char* call, const char* name, const std::size_t* counts, int size,
                        gjDataType_t dtype);

// ntensors >= 0, non-null arrays, each tensor's buffers and byte size; returns the total bytes.
std::size_t tensor_list(const char* call, const void* const* sendbuffs, void* const* recvbuffs,
                        const std::size_t* counts, int ntensors, gjDataType_t dtype);

}  // namespace gj::validate
