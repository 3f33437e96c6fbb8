// The completion side of gj.tensorflow's async kernels: one thread per communicator that makes
// a collective's library calls and finishes the op (its `done`), so TensorFlow's executor
// threads never wait for a peer. One thread per communicator keeps each set's calls in their
// issue order (the executor starts them in program order) and lets a slow set not hold another's.
#ifndef GJ_TF_OPS_WORKER_H_
#define GJ_TF_OPS_WORKER_H_

#include <functional>

#include "gj/collectives.h"

namespace gj_tf {

// Runs job on comm's completion thread, after the jobs posted before it for comm.
void post(gjComm_t comm, std::function<void()> job);

}  // namespace gj_tf

#endif
