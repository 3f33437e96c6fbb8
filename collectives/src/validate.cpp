#include "validate.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "dtype.h"
#include "error.h"

namespace gj::validate {
namespace {

[[noreturn]] void invalid(const char* call, const std::string& detail) {
  throw Error(gjInvalidArgument, std::string(call) + ": " + detail);
}

}  // namespace

void dtype(const char* call, int d) {
  if (!valid_dtype(d)) {
    invalid(call, "dtype=" + std::to_string(d) + " is not a gjDataType_t (0.." +
                      std::to_string(gjNumDataTypes - 1) + ")");
  }
}

void op(const char* call, int o) {
  if (!valid_op(o)) {
    invalid(call, "op=" + std::to_string(o) + " is not a gjRedOp_t (0.." +
                      std::to_string(gjNumRedOps - 1) + ")");
  }
}

void reducible(const char* call, gjDataType_t d) {
  if (is_reducible(d)) return;
  throw Error(gjUnsupported, std::string(call) + ": dtype=" + dtype_name(d) +
                                 " is for data movement only (broadcast, allgather); reductions take "
                                 "f32, f64, f16, bf16, i32, i64 or u8");
}

void scale(const char* call, double prescale, double postscale) {
  if (!std::isfinite(prescale)) invalid(call, "prescale=" + std::to_string(prescale) + " is not finite");
  if (!std::isfinite(postscale)) invalid(call, "postscale=" + std::to_string(postscale) + " is not finite");
}

std::size_t rank_counts(const char* call, const char* name, const std::size_t* counts, int size,
                        gjDataType_t d) {
  if (counts == nullptr) {
    invalid(call, std::string(name) + "=NULL; pass one count per rank (" + std::to_string(size) + " entries)");
  }
  std::size_t total = 0;
  for (int r = 0; r < size; ++r) {
    const std::string at = std::string(name) + "[" + std::to_string(r) + "]";
    bytes(call, at.c_str(), counts[r], d);
    if (counts[r] > static_cast<std::size_t>(PTRDIFF_MAX) / dtype_size(d) - total) {
      invalid(call, "the " + std::to_string(size) + " entries of " + name +
                        " together exceed PTRDIFF_MAX bytes (at " + at + ")");
    }
    total += counts[r];
  }
  return total;
}

std::size_t bytes(const char* call, const char* count_name, std::size_t count, gjDataType_t d) {
  const std::size_t elem = dtype_size(d);
  if (count > static_cast<std::size_t>(PTRDIFF_MAX) / elem) {
    invalid(call, std::string(count_name) + "=" + std::to_string(count) + " elements of " +
                      dtype_name(d) + " exceed the largest possible buffer (PTRDIFF_MAX bytes); " +
                      "was a negative count converted to size_t?");
  }
  return count * elem;
}

void buffer(const char* call, const char* name, const void* p, std::size_t count) {
  if (p == nullptr && count > 0) {
    invalid(call, std::string(name) + "=NULL with count=" + std::to_string(count) +
                      "; pass a buffer of count elements (NULL is allowed only for count=0)");
  }
}

void out_pointer(const char* call, const char* name, const void* p) {
  if (p == nullptr) invalid(call, std::string(name) + "=NULL; pass the address of a variable");
}

void root(const char* call, int r, int size) {
  if (r < 0 || r >= size) {
    invalid(call, "root=" + std::to_string(r) + " is not a rank of this communicator (0.." +
                      std::to_string(size - 1) + ")");
  }
}

std::size_t tensor_list(const char* call, const void* const* sendbuffs, void* const* recvbuffs,
                        const std::size_t* counts, int ntensors, gjDataType_t d) {
  if (ntensors < 0) invalid(call, "ntensors=" + std::to_string(ntensors) + " is negative");
  if (ntensors == 0) return 0;
  const std::string n = std::to_string(ntensors);
  if (counts == nullptr) invalid(call, "counts=NULL with ntensors=" + n);
  if (sendbuffs == nullptr) invalid(call, "sendbuffs=NULL with ntensors=" + n);
  if (recvbuffs == nullptr) invalid(call, "recvbuffs=NULL with ntensors=" + n);
  std::size_t total = 0;
  for (int i = 0; i < ntensors; ++i) {
    const std::string at = "[" + std::to_string(i) + "]";
    const std::size_t b = bytes(call, ("counts" + at).c_str(), counts[i], d);
    if (counts[i] > 0 && sendbuffs[i] == nullptr) {
      invalid(call, "sendbuffs" + at + "=NULL with counts" + at + "=" + std::to_string(counts[i]));
    }
    if (counts[i] > 0 && recvbuffs[i] == nullptr) {
      invalid(call, "recvbuffs" + at + "=NULL with counts" + at + "=" + std::to_string(counts[i]));
    }
    if (b > static_cast<std::size_t>(PTRDIFF_MAX) - total) {
      invalid(call, "the " + n + " tensors together exceed PTRDIFF_MAX bytes (at counts" + at + ")");
    }
    total += b;
  }
  return total;
}

}  // namespace gj::validate
