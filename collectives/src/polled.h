// What a request that completes outside the host queue is polled through: a device backend's
// completion events (backend.h) or the control channel's MPI requests (control.h).
#pragma once

namespace gj {

class Polled {
 public:
  virtual ~Polled() = default;
  // true once the work behind handle is complete (never blocks); throws the work's
  // asynchronous error (gj::Error) if it failed.
  virtual bool completion_done(void* /*handle*/) { return true; }
  // Blocks until the work behind handle is complete; throws as completion_done.
  virtual void completion_wait(void* /*handle*/) {}
  // Frees a handle (after done/wait, or to abandon it).
  virtual void completion_release(void* /*handle*/) noexcept {}
};

}  // namespace gj
