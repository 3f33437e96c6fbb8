// The one interface both backends (MPI for host buffers, NCCL for device buffers) implement.
// Arguments reach a backend already validated by api/op_check.cpp; backends throw gj::Error.
#pragma once

#include <cstddef>
#include <string>

#include "error.h"
#include "gj/collectives.h"
#include "polled.h"

namespace gj {

// Horovod's prescale/postscale factors; {1, 1} is no scaling.
struct Scale {
  double pre = 1.0;
  double post = 1.0;
  bool identity() const { return pre == 1.0 && post == 1.0; }
};

class Backend : public Polled {
 public:
  virtual ~Backend() = default;
  virtual gjBackend_t kind() const = 0;

  virtual void allreduce(const void* send, void* recv, std::size_t count, gjDataType_t dtype,
                         gjRedOp_t op, void* stream) = 0;
  virtual void broadcast(void* buf, std::size_t count, gjDataType_t dtype, int root,
                         void* stream) = 0;

  // Fusion support for grouped allreduce (the grouping logic itself is backend independent).
  // A buffer in this backend's memory (host or device), owned by the backend, at least bytes long,
  // for use on stream (device: the caller's stream decides whether a CUDA graph is being captured).
  virtual void* fusion_buffer(std::size_t bytes, void* stream) = 0;
  // Copies n pieces into/out of one buffer, piece i (bytes[i] long) at offsets[i], offsets
  // ascending and pieces not overlapping (device: one kernel launch). pack leaves the gaps
  // between pieces holding values that are safe to reduce (host: zeros).
  virtual void pack(void* dst, const void* const* srcs, const std::size_t* bytes,
                    const std::size_t* offsets, int n, void* stream) = 0;
  virtual void unpack(void* const* dsts, const void* src, const std::size_t* bytes,
                      const std::size_t* offsets, int n, void* stream) = 0;

  // A backend whose per-call cost is so low that packing
  // costs more than fusion saves (the shared-memory path) reduces the tensors one by one here,
  // with the same bits as allreduce() per tensor, and returns true. false = fuse instead.
  virtual bool allreduce_unfused(const void* const* /*sends*/, void* const* /*recvs*/,
                                 const std::size_t* /*counts*/, int /*n*/, gjDataType_t /*dtype*/,
                                 gjRedOp_t /*op*/, Scale /*scale*/, void* /*stream*/) {
    return false;
  }

  // The operations beyond allreduce/broadcast. Arguments validated by api/op_check.cpp: counts has one
  // entry per rank (elements), dtype is a reducible dtype where op is given, scale as the
  // header defines it. A backend that lacks one throws gjUnsupported (the default).
  virtual void allreduce_scaled(const void* send, void* recv, std::size_t count, gjDataType_t dtype,
                                gjRedOp_t op, Scale scale, void* stream) {
    if (scale.identity()) return allreduce(send, recv, count, dtype, op, stream);
    unsupported("allreduce with prescale/postscale");
  }
  virtual void allgatherv(const void* /*send*/, void* /*recv*/, const std::size_t* /*counts*/,
                          gjDataType_t /*dtype*/, void* /*stream*/) {
    unsupported("allgather");
  }
  virtual void reduce_scatter(const void* /*send*/, void* /*recv*/, const std::size_t* /*counts*/,
                              gjDataType_t /*dtype*/, gjRedOp_t /*op*/, Scale /*scale*/, void* /*stream*/) {
    unsupported("reduce-scatter");
  }
  // Alltoall-v (alltoall/alltoall_plan.h's layout): sendcounts[q] elements to rank q,
  // recvcounts[q] from rank q, each array one entry per rank; send and recv do not overlap.
  virtual void alltoallv(const void* /*send*/, const std::size_t* /*sendcounts*/, void* /*recv*/,
                         const std::size_t* /*recvcounts*/, gjDataType_t /*dtype*/, void* /*stream*/) {
    unsupported("alltoall");
  }

  // Nonblocking device calls: right after a call's work was enqueued on `stream`, a handle
  // that completes when that work has (e.g. a CUDA event recorded on the stream). Host
  // backends finish their work before returning: nullptr, complete at once. A device backend
  // that cannot record completions throws gjUnsupported (the default).
  // Whether record_completion works: checked before a nonblocking device call runs, so an
  // unsupported one is refused without side effects.
  virtual bool has_completions() const { return kind() != gjBackendNccl; }
  // Throws gj::Error where no completion can be recorded on this stream now (gjInvalidUsage
  // during a CUDA graph capture); checked before the call's work is enqueued.
  virtual void check_completion_stream(void* /*stream*/) {}
  virtual void* record_completion(void* /*stream*/) {
    if (kind() == gjBackendNccl) unsupported("nonblocking device operations (completion events)");
    return nullptr;
  }
  // completion_done, completion_wait and completion_release (polled.h) take its handles.

  // The backend's own stream on its device (created on first use), where nonblocking calls
  // communicate after waiting for the caller's stream on the device (api/enqueue.cpp): the
  // caller's later kernels do not queue behind them. nullptr for host backends.
  virtual void* own_stream() { return nullptr; }

  // Error path: stop without waiting for peers. Further calls throw gjInvalidUsage.
  virtual void abort() noexcept = 0;

 protected:
  [[noreturn]] void unsupported(const char* what) const {
    throw Error(gjUnsupported, std::string(what) + " is not implemented by the " +
                                   (kind() == gjBackendNccl ? "NCCL" : "MPI") + " backend");
  }
};

}  // namespace gj
