// This rank's side of the rank socket: the line protocol between the library and its rank
// wrapper (`gj-mpirun --rank-exec`, which stays the program's parent), inherited as
// GJ_RANK_MONITOR_FD (docs/collectives.md "Failure"). The wrapper tells the library which
// world ranks are gone (`lost`) and how the job ends (`end`); the library tells the wrapper
// when it joined (`hello`), when it is done (`leave`) and why it is about to abort (`fail`).
//
// The master can also ask every rank to stop (`stop`: the job is being deleted, or the user
// asked): stop_requested_locally() turns true, and the frontends' stop_requested() reads it
// (docs/agent.md "Stop requests").
//
// A reader thread blocks on the socket: the waits of every host and device path then learn of
// a lost peer from one atomic load (lost_epoch), without a system call in their loops, and
// gjFinalize can wait for `end` on a condition variable. Without the variable (or when it is
// not a socket) there is no thread and nothing is sent; the lost set is still kept, filled by
// the same-node liveness check (liveness.h).
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "mpi_base/peer_check.h"

namespace gj::peer {

// One world rank that is gone: its host (pod) and why, and when this process learned it.
struct Lost {
  std::string host;
  std::string reason;
  std::chrono::steady_clock::time_point since;
};

// One parsed line: its verb and key=value fields (`reason=` runs to the end of the line).
struct Line {
  std::string verb;
  std::map<std::string, std::string> fields;
};
// Pure. A line without a verb yields an empty verb.
Line parse_line(const std::string& text);
// Pure: text with every control character (newline included) turned into a space, so that a
// reason stays one line.
std::string one_line(std::string text);

// How the job ended, as the wrapper said.
enum class End { Unknown, Ok, Failed, NoMonitor };


// Takes GJ_RANK_MONITOR_FD from the environment snapshot (env.h) once, sets FD_CLOEXEC on it
// and starts the reader thread. Idempotent; never throws (a bad value is logged to stderr and
// ignored).
void start(const std::map<std::string, std::string>& env);
bool attached();

// The lost record of a world rank, if it is lost.
std::optional<Lost> lost(int world_rank);
// Records world_rank as lost (first record wins). Used by the reader and by the same-node check.
void mark_lost(int world_rank, const std::string& host, const std::string& reason);

// library -> wrapper; no-ops without a monitor. send_text: whole lines (peer/progress.h).
void send_text(const std::string& lines);
void hello(int world_rank, int world_size);
void leave();  // once
void fail(const char* kind, const std::string& reason);  // kind: nccl-watchdog|stall|peer-lost|error
// After leave(): blocks until the wrapper's `end` (or EOF). NoMonitor without a socket.
End wait_end(std::string* reason);
// True once the wrapper passed on the master's `stop` (GJ_STOP_GRACE: the job is being ended
// and the program may save its state and leave). The first call also tells the wrapper that
// this program polls the flag (`stoppoll`), so that the master waits up to the grace for it
// before ending the ranks. One atomic load after that first call.
bool stop_requested_locally();
// The reason the master gave with `stop` ("" before one came).
std::string stop_reason();

// gjFinalize's part: leave(), then wait_end(); false when the job is failing (`end
// status=failed` or the wrapper gone; without a wrapper: a rank of the job is known lost),
// when MPI must not be finalized.
bool finish();

}  // namespace gj::peer
