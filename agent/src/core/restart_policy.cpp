#include "restart_policy.h"

#include <algorithm>
#include <cstdio>

#include "exit_codes.h"

namespace gj {
namespace {

// "12.3 s" (tenths: a restart after a failure is seconds to minutes).
std::string seconds_text(std::chrono::milliseconds took) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(took.count()) / 1000.0);
  return buf;
}

}  // namespace

RestartDecision decide_restart(const AttemptOutcome& outcome, std::int64_t attempt, std::int64_t max_restarts,
                               std::chrono::milliseconds took) {
  const std::int64_t total = max_restarts + 1;
  const std::string which = "attempt " + std::to_string(attempt + 1) + " of " + std::to_string(total);
  switch (outcome.end) {
    case AttemptEnd::Succeeded:
      return {false, ""};
    case AttemptEnd::Stopped:
      if (max_restarts == 0) return {false, ""};
      return {false, which + " was stopped (" + outcome.why + "); a stopped job is not restarted"};
    case AttemptEnd::RankFailed:
    case AttemptEnd::JobFailed:
      break;
  }
  // mpiexec could not start a program: the next attempt runs the same image and fails the same way.
  if (outcome.end == AttemptEnd::JobFailed &&
      (outcome.status == exit_code::kNotFound || outcome.status == exit_code::kNotExecutable))
    return {false, which + " failed (" + outcome.why + ": a program not found or not executable); not restarted"};
  if (attempt + 1 >= total) {
    if (max_restarts == 0) return {false, ""};  // today's behaviour, today's log
    return {false, which + " failed after " + seconds_text(took) + " (" + outcome.why + "); it was the last (--max-restarts/GJ_MAX_RESTARTS=" +
                       std::to_string(max_restarts) + ")"};
  }
  return {true, which + " failed after " + seconds_text(took) + " (" + outcome.why + "); starting attempt " +
                    std::to_string(attempt + 2) + " of " + std::to_string(total) + " once every host is ready"};
}

std::vector<ForwardedVar> restart_exports(std::int64_t attempt, std::int64_t max_restarts) {
  const std::string count = std::to_string(attempt);
  return {{"GJ_RESTART_COUNT", count},
          {"TORCHELASTIC_RESTART_COUNT", count},
          {"TORCHELASTIC_MAX_RESTARTS", std::to_string(max_restarts)}};
}


LaunchPlan plan_for_attempt(const LaunchPlan& plan, std::int64_t attempt, std::int64_t max_restarts) {
  LaunchPlan out = plan;
  for (auto& v : restart_exports(attempt, max_restarts)) {
    out.exports.erase(std::remove_if(out.exports.begin(), out.exports.end(),
                                     [&](const ForwardedVar& e) { return e.name == v.name; }),
                      out.exports.end());
    out.exports.push_back(std::move(v));
  }
  return out;
}

}  // namespace gj
