// Inside the library errors are exceptions; the entry points (api/entry.h) turn them into result
// codes at the C ABI.
#pragma once

#include <stdexcept>
#include <string>

#include "gj/collectives.h"

namespace gj {

// message is one line naming the call and the value seen, e.g.
// "ncclAllReduce(count=1024, dtype=bf16): unhandled cuda error (run with NCCL_DEBUG=WARN)".
class Error : public std::runtime_error {
 public:
  Error(gjResult_t code, const std::string& message) : std::runtime_error(message), code_(code) {}
  gjResult_t code() const noexcept { return code_; }

 private:
  gjResult_t code_;
};

}  // namespace gj
