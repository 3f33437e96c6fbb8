// Out-of-range enum values as a C caller can pass them. In C++ a static_cast to an enum
// without a fixed underlying type outside its range is unspecified, so copy the bits.
#pragma once

#include <cstring>

template <class E>
E bad_enum(int value) {
  static_assert(sizeof(E) == sizeof(int), "the C enums are int-sized");
  E e;
  std::memcpy(&e, &value, sizeof e);
  return e;
}
