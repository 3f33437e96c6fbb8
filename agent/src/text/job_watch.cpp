#include "job_watch.h"

#include <algorithm>
#include <cstdint>
#include <set>

#include "monitor_line.h"

namespace gj {
namespace {

bool faulty(const RankRecord& r) {
  if (r.hung_ns) return true;
  if (!r.departure) return false;
  const Departure& d = *r.departure;
  if (d.kind != Departure::Kind::Exited || d.code != 0 || d.mpi_abort) return true;
  // Exit 0 is a normal end for a program without the library, or after gjFinalize; a rank that
  // has the library and exits 0 without shutdown left its peers waiting.
  return r.hello && !r.leave_ns;
}

// A clean departure of a library rank: shutdown (or exit 0 after it).
bool left_cleanly(const RankRecord& r) { return r.hello && r.leave_ns.has_value() && !faulty(r); }

// When the rank left the job: its shutdown (`leave`: no collective from it after that), else
// the program's end.
std::int64_t departure_time(const RankRecord& r) {
  if (r.hung_ns) return *r.hung_ns;  // the job was ended for it then
  if (r.leave_ns) return *r.leave_ns;
  if (r.departure) return r.departure->time_ns;
  return INT64_MAX;
}

}  // namespace

std::string signal_name(int sig) {
  static const std::pair<int, const char*> kNames[] = {
      {1, "SIGHUP"},   {2, "SIGINT"},    {3, "SIGQUIT"},  {4, "SIGILL"},   {5, "SIGTRAP"},  {6, "SIGABRT"},
      {7, "SIGBUS"},   {8, "SIGFPE"},    {9, "SIGKILL"},  {10, "SIGUSR1"}, {11, "SIGSEGV"}, {12, "SIGUSR2"},
      {13, "SIGPIPE"}, {14, "SIGALRM"},  {15, "SIGTERM"}, {16, "SIGSTKFLT"}, {17, "SIGCHLD"}, {18, "SIGCONT"},
      {19, "SIGSTOP"}, {20, "SIGTSTP"},  {21, "SIGTTIN"}, {22, "SIGTTOU"}, {23, "SIGURG"},  {24, "SIGXCPU"},
      {25, "SIGXFSZ"}, {26, "SIGVTALRM"}, {27, "SIGPROF"}, {28, "SIGWINCH"}, {29, "SIGIO"}, {30, "SIGPWR"},
      {31, "SIGSYS"}};
  for (const auto& [n, name] : kNames)
    if (n == sig) return name;
  return "signal " + std::to_string(sig);
}

std::string memory_limit_text(const std::string& memory_max) {
  if (memory_max.empty()) return "unknown";
  if (memory_max == "max") return "none";
  if (memory_max.find_first_not_of("0123456789") != std::string::npos || memory_max.size() > 19) return memory_max;
  const unsigned long long b = std::stoull(memory_max);
  const unsigned long long gib = 1ull << 30, mib = 1ull << 20;
  if (b >= gib && b % gib == 0) return std::to_string(b / gib) + " GiB";
  if (b >= mib && b % mib == 0) return std::to_string(b / mib) + " MiB";
  if (b >= mib) return std::to_string(b / mib) + " MiB (" + memory_max + " bytes)";
  return memory_max + " bytes";
}

std::string departure_text(const RankRecord& r) {
  if (r.hung_ns) return r.hung;
  if (!r.departure) return "still running when the job ended";
  const Departure& d = *r.departure;
  std::string out;
  switch (d.kind) {
    case Departure::Kind::Exited:
      if (d.mpi_abort) out = "called MPI_Abort (errorcode " + std::to_string(d.code) + ")";
      else if (d.code != 0) out = "exited with code " + std::to_string(d.code);
      else if (r.leave_ns) out = "called shutdown and exited with code 0 while other ranks were still working";
      else if (r.hello) out = "exited with code 0 without calling shutdown while other ranks were still working";
      else out = "exited with code 0";
      break;
    case Departure::Kind::Signalled:
      out = "killed by " + signal_name(d.code);
      break;
    case Departure::Kind::Dropped:
      return "lost: its rank wrapper's connection to the master " + (d.how.empty() ? "closed" : d.how) +
             " without an exit report (pod " + r.pod + " gone, the wrapper killed, or the network cut)";
  }
  if (d.oom_kill) out += " (OOM killer: pod memory limit " + memory_limit_text(d.memory_max) + ")";
  return out;
}

std::size_t JobWatch::running() const {
  std::size_t n = 0;
  for (const auto& [conn, r] : ranks_)
    if (!r.departure) ++n;
  return n;
}

std::size_t JobWatch::running_with_library() const {
  std::size_t n = 0;
  for (const auto& [conn, r] : ranks_)
    if (!r.departure && r.hello) ++n;
  return n;
}

std::size_t JobWatch::running_polling_stop() const {
  std::size_t n = 0;
  for (const auto& [conn, r] : ranks_)
    if (!r.departure && r.polls_stop) ++n;
  return n;
}

void JobWatch::broadcast(const std::string& line, int except, WatchStep& step) {
  for (const auto& [conn, r] : ranks_)
    if (conn != except && !r.departure) step.sends.push_back({conn, line});
}

void JobWatch::tell_lost(int lost_conn, const std::string& reason, WatchStep& step) {
  if (lost_told_[lost_conn]) return;
  lost_told_[lost_conn] = true;
  const RankRecord& r = ranks_[lost_conn];
  broadcast(format_monitor_line("lost", {{"rank", std::to_string(r.rank)}, {"host", r.pod}}, reason), lost_conn, step);
}

void JobWatch::departed(int conn, const Departure& d, WatchStep& step) {
  RankRecord& r = ranks_[conn];
  if (r.departure) return;
  r.departure = d;
  r.departure->ended_by_us = failing_;
  if (!faulty(r)) return;
  const std::string what = departure_text(r);
  tell_lost(conn, dropped(r) ? "pod " + r.pod + " " + what : what, step);
  if (failing_) return;
  failing_ = true;
  step.job_failed_now = true;
  failure_reason_ = "rank " + std::to_string(r.rank) + " (host " + r.pod + ") " + what;
  broadcast(format_monitor_line("end", {{"status", "failed"}}, failure_reason_), conn, step);
}

WatchStep JobWatch::on_line(int conn, const std::string& text, std::int64_t now_ns) {
  WatchStep step;
  const auto line = parse_monitor_line(text);
  auto it = ranks_.find(conn);
  if (it == ranks_.end()) {
    if (!line || line->verb != "start" || line->get("token") != token_ || !line->number("rank")) {
      step.close.push_back(conn);  // not one of this job's wrappers
      return step;
    }
    RankRecord r;
    r.rank = static_cast<int>(*line->number("rank"));
    r.size = static_cast<int>(line->number("size").value_or(0));
    r.local_rank = static_cast<int>(line->number("local").value_or(-1));
    r.pod = line->get("pod").value_or("?");
    r.pid = static_cast<int>(line->number("pid").value_or(0));
    ranks_[conn] = r;
    return step;
  }
  if (!line) return step;
  RankRecord& r = it->second;
  if (r.departure) return step;
  const std::int64_t t = line->number("time").value_or(now_ns);
  if (line->verb == "hello") {
    r.hello = true;
  } else if (line->verb == "leave") {
    if (r.leave_ns) return step;
    r.leave_ns = t;
    tell_lost(conn, "left the job: called shutdown", step);
    std::size_t left = 0;
    for (const auto& [c, other] : ranks_)
      if (other.leave_ns) ++left;
    if (!failing_ && !end_ok_sent_ && r.size > 0 && left == static_cast<std::size_t>(r.size)) {
      end_ok_sent_ = true;
      // Every rank shut down; one that reported a failure on the way (it lost a peer) makes the
      // end a failed one: no MPI_Finalize, whose fence would wait on a rank that is leaving.
      std::string failed;
      for (const auto& [c, other] : ranks_)
        if (!other.fail_kind.empty() && failed.empty())
          failed = "rank " + std::to_string(other.rank) + " failed: " + other.fail_reason;
      if (failed.empty()) broadcast(format_monitor_line("end", {{"status", "ok"}}), -1, step);
      else broadcast(format_monitor_line("end", {{"status", "failed"}}, failed), -1, step);
    }
  } else if (line->verb == "fail") {
    r.fail_kind = line->get("kind").value_or("error");
    r.fail_reason = line->reason.value_or("");
    // The rank is about to fail (it lost a peer, its NCCL watchdog fired): the job is failing
    // now, so its end is not held up by the time this rank takes to exit.
    if (!failing_) {
      failing_ = true;
      step.job_failed_now = true;
      failure_reason_ = "rank " + std::to_string(r.rank) + " (host " + r.pod + ") failed: " + r.fail_reason;
      broadcast(format_monitor_line("end", {{"status", "failed"}}, failure_reason_), conn, step);
    }
  } else if (line->verb == "stoppoll") {
    r.polls_stop = true;
  } else if (line->verb == "nccl") {
    r.nccl = line->reason.value_or("");
  } else if (line->verb == "stopreq") {
    step.stop_request = line->reason.value_or("pod " + r.pod + " is being stopped");
  } else if (line->verb == "tail") {
    r.stderr_tail.push_back(line->reason.value_or(""));
    if (r.stderr_tail.size() > kTailLines) r.stderr_tail.erase(r.stderr_tail.begin());
  } else if (line->verb == "exit") {
    Departure d;
    if (const auto sig = line->number("signal")) {
      d.kind = Departure::Kind::Signalled;
      d.code = static_cast<int>(*sig);
    } else {
      d.code = static_cast<int>(line->number("code").value_or(0));
    }
    d.time_ns = t;
    d.oom_kill = line->get("oom") == std::string("1");
    d.mpi_abort = line->get("abort") == std::string("1");
    d.memory_max = line->get("memmax").value_or("");
    departed(conn, d, step);
  }
  return step;
}

WatchStep JobWatch::on_hang(int conn, std::int64_t now_ns, std::string what, std::vector<std::string> lines) {
  WatchStep step;
  auto it = ranks_.find(conn);
  if (it == ranks_.end() || it->second.departure || it->second.hung_ns) return step;
  RankRecord& r = it->second;
  r.hung = std::move(what);
  r.hung_ns = now_ns;
  r.hang_lines = std::move(lines);
  tell_lost(conn, r.hung, step);
  if (failing_) return step;
  failing_ = true;
  step.job_failed_now = true;
  failure_reason_ = "rank " + std::to_string(r.rank) + " (host " + r.pod + ") " + r.hung;
  broadcast(format_monitor_line("end", {{"status", "failed"}}, failure_reason_), -1, step);
  return step;
}

WatchStep JobWatch::on_drop(int conn, std::int64_t now_ns, std::string how) {
  WatchStep step;
  auto it = ranks_.find(conn);
  if (it == ranks_.end() || it->second.departure) return step;
  Departure d;
  d.kind = Departure::Kind::Dropped;
  d.time_ns = now_ns;
  d.how = std::move(how);
  departed(conn, d, step);
  return step;
}

std::vector<std::pair<std::string, std::string>> JobWatch::nccl_summaries() const {
  std::map<int, std::pair<std::string, std::string>> by_rank;
  for (const auto& [conn, r] : ranks_)
    if (!r.nccl.empty()) by_rank[r.rank] = {r.pod, r.nccl};
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& [rank, pair] : by_rank) out.push_back(std::move(pair));
  return out;
}

std::map<std::string, std::vector<int>> JobWatch::dropped_pods() const {
  std::map<std::string, std::vector<int>> out;
  std::set<std::string> not_all;
  for (const auto& [conn, r] : ranks_) {
    if (r.pod == master_pod_) continue;
    if (dropped(r)) out[r.pod].push_back(conn);
    else not_all.insert(r.pod);
  }
  for (const auto& pod : not_all) out.erase(pod);
  return out;
}

std::optional<FailureReport> JobWatch::report(const std::set<std::string>& up_pods) const {
  if (!failing_) return std::nullopt;
  std::vector<const RankRecord*> by_time;
  for (const auto& [conn, r] : ranks_) by_time.push_back(&r);
  std::stable_sort(by_time.begin(), by_time.end(), [](const RankRecord* a, const RankRecord* b) {
    return departure_time(*a) < departure_time(*b);
  });
  // The master's own pod is alive (the master runs there), and so are the pods whose sshd still
  // answered. When a pod is lost, the launcher ends every other rank (hydra kills them within
  // 0.15 s of losing a proxy), and the master may see those wrappers' connections drop before
  // (or in the same wake as) the lost pod's own. So while a rank of a pod not known to be up
  // dropped, the drops of pods known to be up are that teardown, not the cause. A failure reported with an
  // exit (code or signal) cannot race so: its wrapper reports before it exits, and only then does
  // the launcher learn of it; then the order of departures decides.
  const auto up = [&](const RankRecord& r) {
    return (!master_pod_.empty() && r.pod == master_pod_) || up_pods.count(r.pod) > 0;
  };
  const bool lost_elsewhere = std::any_of(by_time.begin(), by_time.end(), [&](const RankRecord* r) {
    return faulty(*r) && dropped(*r) && !up(*r);
  });
  const RankRecord* first = nullptr;
  for (const RankRecord* r : by_time)
    if (faulty(*r) && !(lost_elsewhere && up(*r) && dropped(*r))) {
      first = r;
      break;
    }
  if (first == nullptr) return std::nullopt;
  FailureReport out;
  // A rank that failed because it lost a peer points at that peer: a rank that shut down early
  // (exit 0 after gjFinalize) is the cause, not the rank that noticed.
  if (first->fail_kind == "peer-lost") {
    for (const RankRecord* r : by_time)
      if (left_cleanly(*r) && departure_time(*r) < departure_time(*first)) {
        first = r;
        out.left_after_shutdown = true;
        break;
      }
  }
  out.first = *first;
  out.left_ns = departure_time(*first);
  if (dropped(*first)) {
    out.pod_lost = true;
    for (const auto& [conn, r] : ranks_)
      if (r.pod == first->pod && !dropped(r)) out.pod_lost = false;
  }
  for (const RankRecord* r : by_time)
    if (r != first && (faulty(*r) || !r->departure)) out.collateral.push_back(*r);
  return out;
}

}  // namespace gj
