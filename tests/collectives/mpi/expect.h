// Checks that a call failed with the given code and a last-error message containing a substring.
#pragma once

#include <string>

#include "harness.h"

namespace gjt {

inline void expect_error(Ctx& ctx, Failure f, const std::string& name, gjResult_t rc, gjResult_t want,
                         const std::string& substring, gjComm_t comm = nullptr) {
  const std::string msg = gjGetLastError(comm);
  if (rc != want) {
    ctx.fail(f, name + ": returned " + gjGetErrorString(rc) + ", expected " + gjGetErrorString(want) +
                    " (last error: " + msg + ")");
  } else if (msg.find(substring) == std::string::npos) {
    ctx.fail(f, name + ": last error \"" + msg + "\" lacks \"" + substring + "\"");
  }
}

inline void expect_ok(Ctx& ctx, Failure f, const std::string& name, gjResult_t rc, gjComm_t comm = nullptr) {
  if (rc != gjSuccess) ctx.fail(f, name + ": returned " + gjGetErrorString(rc) + ": " + gjGetLastError(comm));
}

}  // namespace gjt
