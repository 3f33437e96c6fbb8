// A communicator's last failure text (gjGetLastError(comm)): a member of every communicator
// (comm.h), written by the API's error boundary (api/last_error.cpp), which is why it lives here
// and not in api/: the communicator sits below the API.
#pragma once

#include <mutex>
#include <string>

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

}  // namespace gj
