// The host queue of a communicator: every host collective runs through it, in the order the
// calls were made. A blocking call runs on the calling thread once every earlier request is
// done (at once, with two uncontended mutex operations, when nothing is queued); a
// nonblocking one is queued for the communicator's progress thread, started on first use.
// Only one collective of the communicator's MPI communicator runs at a time, so MPI sees the
// same call sequence on every rank.
//
// A rank's progress thread usually reaches a request before some peer does (the peer is still
// computing, e.g. in its backward pass). Waiting for it inside the request's collectives
// means spinning in MPI or the shared-memory engine, on a CPU this rank's compute threads
// need when CPUs are scarce. A patient progress thread first waits for every rank to arrive
// at the request (shm/arrivals.h: counters in shared memory, sleeping on a futex), then runs
// it with every rank present. Blocking calls only announce their arrival (a few ns), so a
// blocking call on one rank still meets the same call issued nonblocking on another.
#pragma once

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "backend.h"
#include "config.h"
#include "error.h"
#include "mpi_base/peer_check.h"
#include "peer/progress.h"
#include "stall_abort.h"
#include "work.h"

namespace gj {
namespace shm {
class Arrivals;
}

// How a queued request ended; shared by the queue and the request handle.
class Completion {
 public:
  bool done() const;
  // Blocks until done; returns the result and, for a failure, the message.
  gjResult_t wait(std::string* message);
  void finish(gjResult_t code, std::string message);

 private:
  mutable std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  gjResult_t code_ = gjSuccess;
  std::string message_;
};

// Pure: whether the progress thread waits patiently (GJ_COLL_PROGRESS_WAIT, config.h): Sleep
// yes, Spin no, Auto when the node's ranks, each a compute thread plus a progress thread,
// outnumber this rank's CPUs (2 * local_ranks > cpus).
bool patient_progress(ProgressWait choice, int local_ranks, int cpus);
// Pure: the shared-memory engine's wait setting (GJ_COLL_SHM_WAIT) for a communicator whose
// progress thread is patient or not: auto becomes sleep with a patient one, whose engine
// waits would otherwise spin on the CPU its rank's compute threads need; spin and sleep stay.
ShmWait engine_wait(ShmWait setting, bool patient);
// CPUs this process may run on: its affinity mask, or its cgroup's CPU quota when smaller.
int cpus_of_this_process();

class HostQueue {
 public:
  // comm and host are borrowed from the communicator, which outlives the queue.
  // thread_level: what MPI provides (MPI_Query_thread); below MPI_THREAD_MULTIPLE
  // submit() is refused. patient: see patient_progress(); a patient wait for a peer gives up
  // after timeout_ms (GJ_COLL_TIMEOUT_MS, 0 = forever) with gjTimeout. A collective still
  // running well past timeout_ms (stall_abort.h: a plain MPI call whose peer never came) ends the job.
  HostQueue(MPI_Comm comm, Backend& host, int thread_level, bool patient = false, long timeout_ms = 0);
  bool patient() const { return patient_; }
  ~HostQueue();  // shutdown()
  HostQueue(const HostQueue&) = delete;
  HostQueue& operator=(const HostQueue&) = delete;

  // Runs w on this thread after every earlier request. Throws what w throws, or the cause
  // of an earlier failed request.
  void run_blocking(const Work& w) { run_blocking(w, w.body); }
  // The same with the body given apart (no std::function on the blocking path).
  template <class Body>
  void run_blocking(const Work& w, Body&& body) {
    const bool fast = enter(w.call);
    try {
      const peer::Watching watching(peers_.get());
      check_peers();
      const Armed armed(stall_, w.call);
      if (w.agree_first) require_same_on_all_ranks(comm_, w.call, w.sig);
      body();
    } catch (...) {
      leave(fast);
      throw;
    }
    leave(fast);
  }
  // From now on every collective first checks that no rank of the communicator is lost (then
  // it fails with gjPeerLost at once), and the waits inside it ask peers (mpi_base/peer_check.h).
  void watch_peers(std::shared_ptr<const peer::PeerCheck> peers);
  // Requests run by the progress thread are counted out of progress when their result is ready
  // (peer/progress.h; api/enqueue.cpp counts them in). nullptr: not counted.
  void track(peer::Progress* progress) { progress_ = progress; }
  // Queues w; the completion reports its result. Throws gjInvalidUsage when MPI lacks
  // MPI_THREAD_MULTIPLE or an earlier request failed.
  std::shared_ptr<Completion> submit(Work w);
  // Waits until every queued request is done, then stops the progress thread.
  void shutdown() noexcept;
  // Fails every request not yet started ("communicator aborted"), then stops the thread
  // once the running one (if any) returns.
  void abort() noexcept;

 private:
  struct Item {
    Work work;
    std::shared_ptr<Completion> done;
  };
  // Waits until idle, then marks the queue busy. true: the fast path (no progress thread was
  // ever started: one atomic exchange instead of the mutex); pass it to leave().
  bool enter(const char* call);
  void leave(bool fast);  // clears busy, wakes the progress thread and waiters
  void loop();
  // Takes the front request and, if it may be fused, the queued neighbours every rank has
  // (agreed with one small MPI_Allreduce); runs them. Called with lock held, returns with it held.
  void run_front(std::unique_lock<std::mutex>& lock);
  void execute(const Work& w) const;
  // Counts this rank into its next collective (0 without an arrival board); in patient mode
  // wait_for_arrivals(n) returns once every rank counted itself into collective n.
  std::uint64_t arrive();
  void wait_for_arrivals(std::uint64_t n) const;
  void fail_all_queued(const std::string& why);
  void throw_if_failed(const char* call) const;
  // A collective that starts after a rank of the communicator was lost can never complete.
  void check_peers() const {
    if (peers_) peers_->check_any(false);
  }

  MPI_Comm comm_;
  Backend& host_;
  StallAbort stall_;  // brackets each collective, blocking or queued
  int thread_level_;
  bool patient_;
  // Until the first nonblocking request, blocking calls only exclude each other through
  // inline_; submit() sets threaded_ and waits for inline_ to clear, after which every call
  // takes the mutex path (seq_cst on both: each side sees the other's store).
  std::atomic<bool> threaded_{false};
  std::atomic<bool> inline_{false};
  std::mutex m_;
  std::condition_variable work_cv_;  // progress thread: items or stop
  std::condition_variable idle_cv_;  // blocking callers: nothing queued, nothing running
  std::deque<Item> items_;
  bool busy_ = false;  // a collective runs (on the progress thread or a blocking caller)
  bool stop_ = false;
  std::optional<Error> failed_;  // the first background failure; refuses all later work
  std::thread thread_;
  std::unique_ptr<shm::Arrivals> arrivals_;  // present when any rank of comm waits patiently
  std::shared_ptr<const peer::PeerCheck> peers_;
  peer::Progress* progress_ = nullptr;
};

}  // namespace gj
