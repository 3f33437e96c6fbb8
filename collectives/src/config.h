// One typed configuration, read once from the environment (see config.cpp for parsing).
// Each field: env var, default, meaning. Documented for users in docs/collectives.md.
#pragma once

#include <cstddef>
#include <map>
#include <string>

namespace gj {

enum class BackendChoice { Auto, Mpi, Nccl };
// Ordered by patience: ranks that disagree take the largest (shm/shm_allreduce.cpp).
enum class ShmWait { Auto, Spin, Sleep };
// How the progress thread waits for its peers (queue.h).
enum class ProgressWait { Auto, Spin, Sleep };
// Messages up to this level are printed (log.h).
enum class LogLevel { Error = 0, Warn = 1, Info = 2, Debug = 3 };

struct Config {
  // GJ_COLL_BACKEND=auto|mpi|nccl (default auto): auto = NCCL for device buffers when built
  // with NCCL and a device is present, MPI for host buffers. mpi = never NCCL (device buffers
  // are then rejected with gjUnsupported). nccl = fail at init if NCCL cannot be used.
  BackendChoice backend = BackendChoice::Auto;
  // GJ_COLL_FUSION_BYTES (default 64 MiB): fusion buffer size of gjGroupedAllReduce; 0 = off.
  std::size_t fusion_bytes = std::size_t{64} << 20;
  // GJ_COLL_TIMEOUT_MS (default 0 = wait for ever): a collective whose peer is alive but has
  // not joined it after this long (counted from enqueue) fails: gjTimeout on the device and
  // shared-memory paths, the job ended on the plain MPI path (stall_abort.h). Off by default,
  // as in Horovod: a rank-0-only evaluation or checkpoint may keep the others waiting for
  // many minutes, and a peer that left the job fails the collective at once anyway
  // (gjPeerLost, peer/liveness.h), whatever this says.
  long timeout_ms = 0;
  // GJ_COLL_SHM=1|0 (default 1): intra-node shared-memory path for host buffers when every
  // rank of the communicator is on one node.
  bool shm = true;
  // GJ_COLL_HIERARCHICAL=1|0 (default 1): when the ranks span several nodes (and some node has
  // two or more), host allreduce, grouped allreduce, broadcast, allgather and reduce-scatter run
  // in two levels: the shared-memory engine within each node, MPI between one leader per node
  // (mpi/hierarchical.h). Needs GJ_COLL_SHM on. 0 = the flat MPI collectives over all ranks.
  bool hierarchical = true;
  // GJ_COLL_SHM_WAIT=auto|spin|sleep (default auto): how a rank of the shared-memory path
  // waits for its peers. auto sleeps (futex) when the ranks outnumber their CPUs (the union
  // of their affinity masks, or their cgroup's CPU quota when smaller: a pod's CPU limit) or
  // when the progress thread waits patiently (GJ_COLL_PROGRESS_WAIT: its engine waits share a
  // CPU with compute threads), else spins. Ranks that disagree use the most patient choice
  // any of them asked for (sleep over spin over auto).
  ShmWait shm_wait = ShmWait::Auto;
  // GJ_COLL_PROGRESS_WAIT=auto|spin|sleep (default auto): how the progress thread, which runs
  // nonblocking host requests, waits for peers that have not yet issued its request. sleep:
  // it waits for every rank's arrival on shared-memory counters (a brief spin, a few yields,
  // then a futex), then runs the request with every rank present; spin: it enters the
  // request's collectives at once and waits inside them (spinning in MPI or the engine).
  // auto sleeps when the node's ranks, two threads each (compute + progress), outnumber this
  // rank's CPUs (affinity mask, or cgroup CPU quota when smaller), else spins. Per rank; only
  // when every rank of the communicator is on one node (else spin). queue.h, shm/arrivals.h.
  ProgressWait progress_wait = ProgressWait::Auto;
  // GJ_COLL_LOG_LEVEL=error|warn|info|debug (default warn): messages on stderr.
  LogLevel log_level = LogLevel::Warn;
  // GJ_COLL_CHECK=1|0 (default 0): before every collective, check with one small MPI_Allreduce
  // that all ranks passed the same count/dtype/op (root for broadcast); a mismatch returns
  // gjInvalidUsage on every rank instead of a hang or a wrong result. Grouped allreduce checks
  // its tensor list either way, until gjCommSetCheck (gjComm::agreement).
  bool check = false;
};

// Pure: parses an environment snapshot. Throws gj::Error(gjInvalidArgument) naming the
// variable, the value seen and the accepted values.
Config parse_config(const std::map<std::string, std::string>& env);

}  // namespace gj
