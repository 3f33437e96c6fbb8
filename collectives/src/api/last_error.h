// The detail text of failed calls (gjGetLastError): the last failure of each thread, and the
// last failure on each communicator (last_failure.h), which any thread may write and read at once.
#pragma once

#include <string>

struct gjComm;

namespace gj {

// Records a failure of call: "call: detail" (detail already starting with "call: " is kept as
// is) becomes this thread's last error and, when comm is live, comm's. Safe against a
// concurrent gjCommDestroy of comm (the write happens under the registry's lock).
void record_failure(const char* call, gjComm* comm, const std::string& detail);

}  // namespace gj
