// The one interface both backends (MPI for host buffers, NCCL for device buffers) implement.
// Arguments reach a backend already validated by api.cpp; backends throw gj::Error.
#pragma once

#include <cstddef>

#include "gj/collectives.h"

namespace gj {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual gjBackend_t kind() const = 0;

  virtual void allreduce(const void* send, void* recv, std::size_t count, gjDataType_t dtype,
                         gjRedOp_t op, void* stream) = 0;
  virtual void broadcast(void* buf, std::size_t count, gjDataType_t dtype, int root,
                         void* stream) = 0;

  // Fusion support for grouped allreduce (the grouping logic itself is backend independent).
  // A buffer in this backend's memory (host or device), owned by the backend, at least bytes long.
  virtual void* fusion_buffer(std::size_t bytes) = 0;
  // Copies n pieces into/out of a contiguous buffer in order (device: one kernel launch).
  virtual void pack(void* dst, const void* const* srcs, const std::size_t* bytes, int n,
                    void* stream) = 0;
  virtual void unpack(void* const* dsts, const void* src, const std::size_t* bytes, int n,
                      void* stream) = 0;

  // Added by the collectives API work: a backend whose per-call cost is so low that packing
  // costs more than fusion saves (the shared-memory path) reduces the tensors one by one here,
  // with the same bits as allreduce() per tensor, and returns true. false = fuse instead.
  virtual bool allreduce_unfused(const void* const* /*sends*/, void* const* /*recvs*/,
                                 const std::size_t* /*counts*/, int /*n*/, gjDataType_t /*dtype*/,
                                 gjRedOp_t /*op*/, void* /*stream*/) {
    return false;
  }

  // Error path: stop without waiting for peers. Further calls throw gjInvalidUsage.
  virtual void abort() noexcept = 0;
};

}  // namespace gj
