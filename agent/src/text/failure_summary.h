// The failure summary the master prints at the end of its log when a rank failed, and its short
// form for /dev/termination-log (docs/agent.md "Rank failures"). Pure rendering.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "job_watch.h"

namespace gj {

// "2026-12-04T20:31:07.123Z"
std::string utc_time_text(std::int64_t realtime_ns);

// The summary's lines, in order (each one log line).
std::vector<std::string> render_failure_summary(const FailureReport& report);

// One line: "rank 1 (local rank 1, pod job-worker-0) exited with code 3; 1 other rank ended with it".
std::string failure_short_form(const FailureReport& report);

// A worker's rank wrapper's line for its own pod's termination log (no master view there).
std::string rank_short_form(const RankRecord& rank);

}  // namespace gj
