// Where the non-fatal warnings of gj_agent_sys go (skipped session variables, a locked root
// account, ...). Default: one line "gj-mpirun: warning: ..." on stderr; the agent routes them
// into its logger with set_warning_sink.
#pragma once

#include <functional>
#include <string>

namespace gj {

using WarningSink = std::function<void(const std::string&)>;
// An empty sink is ignored (the previous one stays).
void set_warning_sink(WarningSink sink);

// Passes one line to the current sink (used by this library's sources).
void warn(const std::string& line);

}  // namespace gj
