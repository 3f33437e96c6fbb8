// The one error type of the pure planning core. Every check that rejects an input throws it
// with the documented exit code of its class (exit_codes.h) and a one-line message naming the
// input, the value seen and the fix. main() turns it into the process exit status.
#pragma once

#include <string>
#include <utility>

namespace gj {

struct AgentError {
  int exit_code;
  std::string message;
};

}  // namespace gj
