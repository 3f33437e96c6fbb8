// The master's view inside a running job, as pure logic: every rank's collective progress per
// set (the library's `set`/`prog` lines, peer/progress.h) and its process samples (the
// wrapper's `ping state= cpu= rss= hwm=`), relayed by the rank wrappers. From them: which ranks
// hold up a collective that others have waited in for the stall time (then the wrappers are
// asked to `diag`nose them: process state, CPU use, Python stack), the hang timeout, the
// `status:` lines and the end-of-job per-rank lines. sys/job_monitor.h owns the sockets and
// the clock and feeds this. docs/agent.md "Hangs", "Status lines".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "monitor_line.h"

namespace gj {

struct ViewOptions {
  std::int64_t stall_ms = 60000;        // HOROVOD_STALL_CHECK_TIME_SECONDS; 0: no hang lines
  std::int64_t hang_timeout_ms = 0;     // GJ_HANG_TIMEOUT; 0: never
  std::int64_t repeat_ms = 60000;       // a hang's lines again after this long while it lasts
  std::int64_t status_ms = 60000;       // GJ_STATUS_INTERVAL; 0: no status lines
  std::int64_t diag_wait_ms = 3000;     // how long the lines wait for the wrappers' answers
  // Stragglers: windows of this length; a rank is named when it spends the least time in
  // collectives by more than straggler_share of the window (the others wait for it) in
  // straggler_windows of the last straggler_windows + 1 windows. 0: off.
  std::int64_t straggler_window_ms = 5000;
  double straggler_share = 0.10;
  int straggler_windows = 3;
};

// Who a connection is (JobWatch's record of its `start`).
struct RankIdentity {
  int rank = -1;
  int local_rank = -1;
  std::string pod;
};

// A hang past the timeout: the rank that never entered, what it did not enter, its stack.
struct HungRank {
  int conn = -1;
  std::string what;                // "has not entered gjAllReduce #5 of the world set (2 ranks) for 30 s ..."
  std::vector<std::string> stack;  // its diagnosis lines (state, CPU, Python stack)
};

struct ViewStep {
  std::vector<int> diagnose;            // connections to send `diag`
  std::vector<std::string> warn_lines;  // hang lines for the log
  std::vector<std::string> info_lines;  // status lines for the log
  std::vector<HungRank> hung;           // the hang timeout passed: the job fails for these
};

class JobView {
 public:
  explicit JobView(ViewOptions options = {}) : options_(options) {}

  // A line from a started wrapper's connection; now_ms: the master's steady clock.
  void on_line(int conn, const RankIdentity& who, const MonitorLine& line, std::int64_t now_ms);
  // The connection's rank left (its exit, or a drop): it holds nothing up any more.
  void on_gone(int conn);
  // Called often (every monitor wake); decides what to ask, say and end.
  ViewStep tick(std::int64_t now_ms);
  // One line per rank that reported: collectives, bytes, share of time in collectives, peak
  // RSS. For the end of every job.
  std::vector<std::string> end_lines() const;
  // Every series in Prometheus' text format (docs/agent.md "Metrics"); failing: the job is
  // failing (gj_job_state).
  std::string prometheus_text(bool failing) const;

 private:
  struct SetProgress {
    std::uint64_t in = 0, done = 0;
    std::string call, done_call;
    std::int64_t changed_ms = 0;  // master's clock when it last entered or completed (report time - age)
    std::uint64_t bytes = 0;
    std::int64_t in_ms = 0;       // time in collectives
  };
  struct Diagnosis {
    std::int64_t asked_ms = 0;
    bool done = false;
    std::vector<std::string> lines;  // rendered (state line, then the stack)
  };
  struct Rank {
    RankIdentity who;
    bool gone = false;
    std::map<std::string, SetProgress> sets;
    char state = 0;
    std::int64_t cpu_ms = 0, rss = 0, hwm = 0;
    std::int64_t net_rx = -1, net_tx = -1;  // its pod's, as its wrapper last read them
    std::int64_t throttled_us = 0;          // its pod's cgroup cpu.stat throttled_usec
    double memory_pressure = 0;             // its pod's memory.pressure "some avg10" (%)
    std::int64_t gpu_memory = -1;           // device memory NVML lists for its program (-1: none known)
    double gpu_utilization = 0;             // the mean utilization of its devices, 0..1
    std::int64_t first_ms = -1, last_ms = -1;  // first and last progress report
    std::optional<Diagnosis> diag;
  };
  struct SetInfo {
    std::vector<int> members;  // world ranks
  };
  struct Episode {
    std::uint64_t seq = 0;          // the collective the others wait in
    std::int64_t next_ms = 0;       // when the next lines are due (0: now, once diagnoses are in)
    std::vector<int> missing;       // conns diagnosed for it
    bool told = false;              // lines written for the current round
    bool fired = false;             // the hang timeout ended the job
  };
  struct Totals {
    std::uint64_t collectives = 0, bytes = 0;
    std::int64_t in_ms = 0;
  };

  void hang_check(const std::string& id, const SetInfo& set, std::int64_t now, ViewStep& step);
  void status_check(std::int64_t now, ViewStep& step);
  void straggler_check(std::int64_t now, ViewStep& step);
  std::string describe_set(const std::string& id) const;
  std::vector<std::string> diagnosis_lines(int conn) const;
  Totals totals(const Rank& r) const;

  ViewOptions options_;
  std::map<int, Rank> ranks_;  // by connection
  std::map<std::string, SetInfo> sets_;
  std::map<std::string, Episode> episodes_;  // by set id
  std::int64_t next_status_ms_ = -1;
  std::map<int, Totals> status_base_;  // totals at the last status line, by connection
  std::int64_t hang_waited_ms_ = 0;     // the longest current wait past the stall time (tick)
  std::size_t hang_ranks_ = 0;          // ranks named in a current hang
  struct Sample {
    std::int64_t in_ms = 0, cpu_ms = 0, throttled_us = 0;
    std::uint64_t collectives = 0;
  };
  std::int64_t next_straggler_ms_ = -1;
  std::map<int, Sample> straggler_base_;  // by connection, at the window's start
  std::vector<int> flagged_;              // the last windows' slow rank (a connection), -1: none
  int straggler_ = -1;                    // the connection named in the current episode, -1: none
};

// "1.5 GiB", "12.0 MiB", "512 KiB", "100 B".
std::string bytes_text(double bytes);
// "S" -> "sleeping (S)", "T" -> "stopped (T)", ...
std::string process_state_text(char state);

}  // namespace gj
