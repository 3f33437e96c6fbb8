// The detail text of failed calls (gjGetLastError): the last failure of each thread, and the
// last failure on each communicator, which any thread may write and read at once.
#pragma once

#include <mutex>
#include <string>

struct gjComm;

namespace gj {

// A communicator's last failure. Written by whichever thread's call failed, read by any
// thread's gjGetLastError: a lock, and readers get a copy.
class LastError {
 public:
  void set(std::string text) {
    std::lock_guard<std::mutex> lock(m_);
    text_ = std::move(text);
  }
  std::string get() const {
    std::lock_guard<std::mutex> lock(m_);
    return text_;
  }

 private:
  mutable std::mutex m_;
  std::string text_;
};

// Records a failure of call: "call: detail" (detail already starting with "call: " is kept as
// is) becomes this thread's last error and, when comm is live, comm's. Safe against a
// concurrent gjCommDestroy of comm (the write happens under the registry's lock).
void record_failure(const char* call, gjComm* comm, const std::string& detail);

}  // namespace gj
