// Names and sizes of the public enums, for messages and byte arithmetic.
#pragma once

#include <cstddef>
#include <cstring>

#include "gj/collectives.h"

namespace gj {

// The int a C caller passed for an enum parameter, read without loading the C++ enum (which
// is undefined behaviour for values outside the enumerators' range).
template <class Enum>
int enum_bits(const Enum& e) {
  static_assert(sizeof(Enum) == sizeof(int), "the C ABI's enums are int-sized");
  int v = 0;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

constexpr bool valid_dtype(int d) { return d >= 0 && d < gjNumDataTypes; }
constexpr bool valid_op(int o) { return o >= 0 && o < gjNumRedOps; }
// Dtypes the reductions know (0 .. gjNumReducibleDataTypes-1); the others only move.
constexpr bool is_reducible(gjDataType_t d) {
  return static_cast<int>(d) >= 0 && static_cast<int>(d) < gjNumReducibleDataTypes;
}
constexpr bool is_floating(gjDataType_t d) {
  return d == gjFloat32 || d == gjFloat64 || d == gjFloat16 || d == gjBfloat16;
}

// 0 for an invalid dtype.
constexpr std::size_t dtype_size(gjDataType_t d) {
  switch (d) {
    case gjFloat32: case gjInt32: return 4;
    case gjFloat64: case gjInt64: return 8;
    case gjFloat16: case gjBfloat16: return 2;
    case gjUint8: case gjInt8: case gjBool: case gjByte: return 1;
    case gjInt16: return 2;
    default: return 0;
  }
}

constexpr const char* dtype_name(gjDataType_t d) {
  switch (d) {
    case gjFloat32: return "f32";
    case gjFloat64: return "f64";
    case gjFloat16: return "f16";
    case gjBfloat16: return "bf16";
    case gjInt32: return "i32";
    case gjInt64: return "i64";
    case gjUint8: return "u8";
    case gjInt8: return "i8";
    case gjInt16: return "i16";
    case gjBool: return "bool";
    case gjByte: return "byte";
    default: return "invalid";
  }
}

constexpr const char* op_name(gjRedOp_t o) {
  switch (o) {
    case gjSum: return "sum";
    case gjAvg: return "avg";
    case gjMin: return "min";
    case gjMax: return "max";
    case gjProd: return "prod";
    default: return "invalid";
  }
}

}  // namespace gj
