// The communicator behind the opaque gjComm_t handle.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include "backend.h"
#include "last_failure.h"
#include "backend_choice.h"
#include "config.h"
#include "control.h"
#include "peer/liveness.h"
#include "peer/progress.h"
#include "queue.h"

struct gjComm {
  MPI_Comm mpi = MPI_COMM_NULL;  // our duplicate, MPI_ERRORS_RETURN
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  gj::Config config;
  // Which calls compare their arguments across ranks before moving data (the agreement
  // check, docs/collectives.md). From the environment: GJ_COLL_CHECK=1 every call, else only
  // grouped allreduces (a mismatched tensor list would reduce misaligned data). After
  // gjCommSetCheck(comm, 1 | 0): every call | none, for a caller that guarantees matching
  // calls itself (gj.torch's DistributedOptimizer agrees on its whole bucket plan once).
  enum class AgreementScope { None, Grouped, All };
  AgreementScope agreement = AgreementScope::Grouped;
  // Whether a call of this kind (a grouped allreduce, or any other) runs the agreement check.
  bool runs_agreement_check(bool grouped) const {
    return agreement == AgreementScope::All || (grouped && agreement == AgreementScope::Grouped);
  }
  std::size_t fusion_threshold = 0;
  gj::BackendPlan plan;
  // Whether its peers are still there (peer/liveness.h): every collective checks it first,
  // and its waits ask it while unsatisfied. Declared before the backends, which borrow it.
  std::shared_ptr<const gj::peer::Liveness> live;
  std::unique_ptr<gj::Backend> host;    // MPI (+ shared memory)
  std::unique_ptr<gj::Backend> device;  // NCCL once a device collective ran, or null
  int thread_level = MPI_THREAD_SINGLE;  // what MPI provides (MPI_Query_thread)
  // What this rank has entered and completed on this communicator, for the master's hang view
  // (peer/progress.h). Declared before the queue, which counts requests out of it.
  std::unique_ptr<gj::peer::Progress> progress;
  // Every collective on `mpi` goes through here, host or device, in call order. Declared
  // after the backends: destroyed (drained, thread joined) before them.
  std::unique_ptr<gj::HostQueue> queue;
  // Small MAX allreduces outside the queue's order (control.h): gjIcontrolMax.
  std::unique_ptr<gj::ControlChannel> control;
  gj::LastError last_error;  // the last failed call on this communicator (gjGetLastError)
  // Over MPI_COMM_WORLD's ranks (a duplicate of it): the rank wrapper hears `hello` when the
  // first is created and `leave` when the last is destroyed (peer/monitor.h).
  bool world = false;

  // The backend for a call's buffers (buffer_device: the device of its device buffers, -1 for
  // host buffers); throws gjUnsupported for device buffers without NCCL. The first call with a
  // device buffer creates the NCCL communicator on that device (collective).
  gj::Backend& backend_for(int buffer_device, const char* call);
  // The same from inside a queued item (the progress thread, the queue held): a nonblocking
  // device call creates the NCCL communicator there, so its caller waits for no peer.
  gj::Backend& backend_in_queue(int buffer_device, const char* call);
  // On the caller's thread, without waiting: throws backend_for's gjUnsupported for device
  // buffers once the first device collective has found NCCL unusable; else nothing.
  void refuse_device_buffers_if_decided(const char* call) const;
  // Set (release) once the first device collective decided: device created, or plan.use_nccl
  // false with the reason. Read by callers that do not hold the queue.
  std::atomic<bool> device_decided{false};

  // Alltoall's buffer kind, agreed by all ranks: a rank that sends and receives nothing has no
  // buffer to tell, and taking the host path while its peers take NCCL would hang both. Where
  // device buffers may use NCCL, one MPI_Allreduce (in the queue's order) of every rank's kind;
  // an empty rank then takes its peers' path (on its current device). Throws
  // gjInvalidArgument on every rank when some pass device buffers and others host buffers.
  int alltoall_device(int buffer_device, bool empty, const char* call);

 private:
  gj::Backend& chosen_backend(int buffer_device, const char* call);
  void create_device_backend(int buffer_device);  // collective; the queue held
};

namespace gj {

// Collective over parent (duplicated): reads the environment (or takes `inherit`, a parent
// communicator's settings, for gjCommSplit), agrees on the backends with all ranks, sets
// them up. Throws gj::Error.
std::unique_ptr<gjComm> create_comm(MPI_Comm parent, const Config* inherit = nullptr);

// Collective: frees backends and the MPI communicator.
void destroy_comm(std::unique_ptr<gjComm> comm);

// Local: stops the backends without waiting for peers. The duplicated MPI communicator is
// not freed (freeing may wait for peers that are gone).
void abort_comm(std::unique_ptr<gjComm> comm) noexcept;

}  // namespace gj
