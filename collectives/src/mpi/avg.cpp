#include "mpi/avg.h"

#include <cstdint>

#include "error.h"
#ifdef GJ_HAVE_HOST_REDUCE
#include "host/reduce.h"
#endif

namespace gj {
namespace {

template <class T>
void divide(void* buf, std::size_t count, int ranks) {
  T* p = static_cast<T*>(buf);
  const T d = static_cast<T>(ranks);
  for (std::size_t i = 0; i < count; ++i) p[i] = static_cast<T>(p[i] / d);
}

}  // namespace

void scale_contribution(void* out, const void* in, std::size_t count, gjDataType_t dtype, int ranks) {
#ifdef GJ_HAVE_HOST_REDUCE
  host::scale(out, in, count, dtype, 1.0 / ranks);
#else
  // Without the shared host code only the natively typed floats can be scaled here.
  const double s = 1.0 / ranks;
  if (dtype == gjFloat32) {
    for (std::size_t i = 0; i < count; ++i) {
      static_cast<float*>(out)[i] = static_cast<float>(static_cast<const float*>(in)[i] * s);
    }
  } else if (dtype == gjFloat64) {
    for (std::size_t i = 0; i < count; ++i) static_cast<double*>(out)[i] = static_cast<const double*>(in)[i] * s;
  } else {
    throw Error(gjUnsupported, "gjAvg on 16-bit floats needs the host reduction code, which this build lacks");
  }
#endif
}

void divide_sum(void* buf, std::size_t count, gjDataType_t dtype, int ranks) {
  switch (dtype) {
    case gjInt32: divide<std::int32_t>(buf, count, ranks); break;
    case gjInt64: divide<std::int64_t>(buf, count, ranks); break;
    case gjUint8: divide<std::uint8_t>(buf, count, ranks); break;
    default: throw Error(gjInternalError, "divide_sum called for a floating dtype");
  }
}

}  // namespace gj
