#include "failure_summary.h"

#include <cstdint>
#include <cstdio>
#include <ctime>

namespace gj {
namespace {

std::string who(const RankRecord& r) {
  std::string out = "rank " + std::to_string(r.rank) + " (";
  if (r.local_rank >= 0) out += "local rank " + std::to_string(r.local_rank) + ", ";
  return out + "pod " + r.pod + ")";
}

std::string fail_label(const std::string& kind) {
  if (kind == "nccl-watchdog") return "NCCL watchdog abort";
  if (kind == "stall") return "stall timeout";
  if (kind == "peer-lost") return "lost a peer";
  return "library error";
}

std::string collateral_entry(const RankRecord& r) {
  std::string out = "rank " + std::to_string(r.rank) + " (" + r.pod + ", ";
  if (!r.departure) return out + "still running)";
  const Departure& d = *r.departure;
  if (d.kind == Departure::Kind::Exited) out += "exit " + std::to_string(d.code);
  else if (d.kind == Departure::Kind::Signalled) out += signal_name(d.code);
  else out += "connection lost";
  if (!r.fail_kind.empty()) out += ", " + fail_label(r.fail_kind);
  return out + ")";
}

}  // namespace

std::string utc_time_text(std::int64_t ns) {
  const std::time_t s = static_cast<std::time_t>(ns / 1000000000);
  std::tm tm{};
  ::gmtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char ms[8];
  std::snprintf(ms, sizeof ms, ".%03dZ", static_cast<int>((ns / 1000000) % 1000));
  return std::string(buf) + ms;
}

std::vector<std::string> render_failure_summary(const FailureReport& rep) {
  const RankRecord& r = rep.first;
  std::vector<std::string> out;
  std::string head = "rank failure: " + who(r) + " " + departure_text(r);
  if (rep.left_ns > 0 && rep.left_ns != INT64_MAX) head += " at " + utc_time_text(rep.left_ns);
  out.push_back(head + (r.hung_ns ? "; the job was ended for it" : "; it was the first rank to leave the job"));
  for (const auto& line : r.hang_lines) out.push_back("  " + line);
  if (r.departure && r.departure->oom_kill)
    out.push_back("  killed by the OOM killer (pod memory limit " + memory_limit_text(r.departure->memory_max) +
                  "): raise the pod's memory limit or use less memory per rank");
  if (rep.pod_lost)
    out.push_back("  pod " + r.pod + " lost: every rank wrapper there lost its connection to the master at once");
  if (rep.left_after_shutdown)
    out.push_back("  it called shutdown before its peers were done: every rank must run the same collectives");
  if (!r.fail_kind.empty())
    out.push_back("  " + fail_label(r.fail_kind) + (r.fail_reason.empty() ? "" : ": " + r.fail_reason));
  if (!r.stderr_tail.empty()) {
    out.push_back("  last " + std::to_string(r.stderr_tail.size()) + " line(s) of its stderr:");
    for (const auto& line : r.stderr_tail) out.push_back("  | " + line);
  } else if (r.departure && !dropped(r)) {
    out.push_back("  its stderr was empty");
  }
  if (!rep.collateral.empty()) {
    std::string line = "  collateral (ended because of it): ";
    for (std::size_t i = 0; i < rep.collateral.size(); ++i)
      line += (i > 0 ? ", " : "") + collateral_entry(rep.collateral[i]);
    out.push_back(line);
  }
  return out;
}

std::string failure_short_form(const FailureReport& rep) {
  std::string out = who(rep.first) + " " + departure_text(rep.first);
  if (!rep.first.fail_kind.empty() && rep.first.fail_kind != "peer-lost") out += " (" + fail_label(rep.first.fail_kind) + ")";
  if (!rep.collateral.empty())
    out += "; " + std::to_string(rep.collateral.size()) + " other rank" + (rep.collateral.size() == 1 ? "" : "s") +
           " ended with it";
  return out + "; the master's log has the summary";
}

std::string rank_short_form(const RankRecord& r) {
  std::string out = who(r) + " " + departure_text(r);
  if (!r.fail_kind.empty()) out += " (" + fail_label(r.fail_kind) + ")";
  if (!r.stderr_tail.empty()) out += "; last stderr line: " + r.stderr_tail.back();
  return out;
}

}  // namespace gj
