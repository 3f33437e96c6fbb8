// The master's job monitor, as pure logic: what every rank's wrapper reported (start, the
// library's hello/leave/fail, the program's exit with its time of departure and stderr tail),
// what to tell the other ranks (`lost`, `end`), when the job has failed, and which rank made it
// fail. sys/job_monitor.h owns the sockets and feeds this; failure_summary.h renders the result.
// Protocol and rules: docs/agent.md "Rank failures".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace gj {

// How a rank left, as its wrapper (or the monitor, for a lost connection) saw it.
struct Departure {
  enum class Kind { Exited, Signalled, Dropped };
  Kind kind = Kind::Exited;
  int code = 0;             // exit code, or signal number
  std::int64_t time_ns = 0; // CLOCK_REALTIME of the departure
  bool oom_kill = false;    // the pod's cgroup memory.events oom_kill rose while it ran
  std::string memory_max;   // the cgroup's memory.max ("max", bytes) when known
  bool ended_by_us = false; // the job was already failing when it left
  std::string how;          // Dropped: how the connection ended ("closed", "went silent (...)", ...)
  bool mpi_abort = false;   // Exited: the program called MPI_Abort (code: its errorcode; seen on hydra's PMI)
};

struct RankRecord {
  int rank = -1;
  int size = 0;
  int local_rank = -1;
  std::string pod;
  int pid = 0;
  bool hello = false;                 // the library has MPI_COMM_WORLD
  std::optional<std::int64_t> leave_ns;  // gjFinalize called
  std::string fail_kind;              // the library's last `fail kind=`
  std::string fail_reason;
  std::vector<std::string> stderr_tail;  // the last lines of its stderr (at most kTailLines)
  std::optional<Departure> departure;
  bool polls_stop = false;            // its program polls for a stop request (`stoppoll`)
  std::string nccl;                   // its wrapper's last `nccl` summary (nccl_log.h), or ""
  // The hang timeout ended the job for this rank (on_hang): what it never entered, when, and
  // what its wrapper saw (process state, CPU use, Python stack).
  std::string hung;
  std::optional<std::int64_t> hung_ns;
  std::vector<std::string> hang_lines;
};

inline constexpr std::size_t kTailLines = 20;

// One line to one connection.
struct Send {
  int conn;
  std::string line;
};

struct WatchStep {
  std::vector<Send> sends;
  std::vector<int> close;  // connections to close (wrong token, not a wrapper)
  bool job_failed_now = false;  // this event made the job fail: end it
  // A wrapper asked that the whole job be asked to stop (`stopreq`: its pod is being deleted).
  std::optional<std::string> stop_request;
};

// What the summary is made of.
struct FailureReport {
  RankRecord first;                   // the rank whose departure made the job fail
  std::int64_t left_ns = 0;           // when it left: its shutdown (`leave`), else its end
  bool left_after_shutdown = false;   // first left cleanly (shutdown, exit 0) before the others failed
  bool pod_lost = false;              // every rank of first's pod lost its connection
  std::vector<RankRecord> collateral; // the other ranks that left abnormally, in departure order
};

class JobWatch {
 public:
  // master_pod: the pod the master (and mpiexec) runs in, as the wrappers name pods; "" when
  // unknown. That pod is not gone while the master watches, so its wrappers' lost connections
  // are the launcher's teardown, not the cause (report()).
  explicit JobWatch(std::string token, std::string master_pod = "")
      : token_(std::move(token)), master_pod_(std::move(master_pod)) {}

  // A line from a connection (without its newline); now_ns: the master's CLOCK_REALTIME.
  WatchStep on_line(int conn, const std::string& line, std::int64_t now_ns);
  // The connection closed (or went silent) before the wrapper reported the program's exit;
  // `how` says which, as the summary words it after "connection to the master": "closed",
  // "failed (<errno text>)", "went silent (...)".
  WatchStep on_drop(int conn, std::int64_t now_ns, std::string how = "");

  // The hang timeout passed while this connection's rank held up a collective (job_view.h):
  // the job fails for it, as for a rank that left (`lost` to the others, `end status=failed`).
  WatchStep on_hang(int conn, std::int64_t now_ns, std::string what, std::vector<std::string> lines);

  bool failing() const { return failing_; }
  // Connections that started and have not yet reported an exit or dropped.
  std::size_t running() const;
  // Of those, the ones whose library said hello (they can be told `lost` and raise).
  std::size_t running_with_library() const;
  // Of those, the ones whose program polls for a stop request.
  std::size_t running_polling_stop() const;
  // (pod, NCCL summary) of every rank whose wrapper sent one, in rank order: the master's
  // NCCL transport report (log_nccl_transport, preflight_run.h).
  std::vector<std::pair<std::string, std::string>> nccl_summaries() const;
  const std::map<int, RankRecord>& ranks() const { return ranks_; }  // by connection
  // The pods other than the master's whose every rank wrapper dropped, each with its
  // connections: the candidates for the pod that was lost.
  std::map<std::string, std::vector<int>> dropped_pods() const;
  // up_pods: pods known to be up after the failure (their sshd answered, JobMonitor::
  // pods_still_up). Like the master's own, their dropped wrappers are the launcher's teardown
  // (hydra's mpiexec kills every rank within ~0.15 s of losing one pod), not the cause, unless
  // nothing else failed.
  std::optional<FailureReport> report(const std::set<std::string>& up_pods = {}) const;

 private:
  void departed(int conn, const Departure& d, WatchStep& step);
  void tell_lost(int lost_conn, const std::string& reason, WatchStep& step);
  void broadcast(const std::string& line, int except, WatchStep& step);

  std::string token_;
  std::string master_pod_;
  std::map<int, RankRecord> ranks_;
  std::map<int, bool> lost_told_;  // by connection
  bool failing_ = false;
  bool end_ok_sent_ = false;
  std::string failure_reason_;
};

// The rank's wrapper connection dropped (closed, failed, went silent) without an exit report.
inline bool dropped(const RankRecord& r) { return r.departure && r.departure->kind == Departure::Kind::Dropped; }

// "SIGKILL", "SIGSEGV", ...; "signal 42" for one without a name here.
std::string signal_name(int sig);
// "2 GiB", "512 MiB", "1234567 bytes"; "max" -> "none".
std::string memory_limit_text(const std::string& memory_max);
// What the rank's departure was, for `lost` and the summary: "exited with code 3", "killed by
// SIGKILL (OOM killer: pod memory limit 2 GiB)", "lost its wrapper's connection (...)".
std::string departure_text(const RankRecord& r);

}  // namespace gj
