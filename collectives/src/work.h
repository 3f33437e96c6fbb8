// One collective call, ready to run on the host queue (queue.h): its agreement record and its
// body. Built by api/enqueue.cpp from validated arguments; arrays it needs are copied into the body.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>

#include "agreement.h"
#include "backend.h"
#include "gj/collectives.h"

namespace gj {

struct Work {
  const char* call = "";
  Signature sig;
  bool agree_first = false;    // run the agreement check before the body (gjComm::runs_agreement_check)
  std::function<void()> body;  // the collective itself, after the check

  // Set for a host single-tensor allreduce: queued neighbours with the same dtype, op and
  // scale may be fused with it into one grouped allreduce of at most `limit` bytes.
  struct Fusible {
    const void* send;
    void* recv;
    std::size_t count;
    gjDataType_t dtype;
    gjRedOp_t op;
    Scale scale;
    std::size_t limit;  // the communicator's fusion threshold at the call; 0 = never fused
    bool same_kind(const Fusible& o) const {
      return dtype == o.dtype && op == o.op && scale.pre == o.scale.pre && scale.post == o.scale.post;
    }
  };
  std::optional<Fusible> fuse;
};

}  // namespace gj
