// The pod's termination message: one line in /dev/termination-log, which Kubernetes shows in the
// pod status. Best effort: the file is absent outside Kubernetes, and writing it never fails
// the caller.
#pragma once

#include <string>

namespace gj {

// Writes `line` (newlines made spaces, cut at 4000 bytes) to /dev/termination-log when it exists.
void write_termination_message(const std::string& line);

// Same, to an explicit path (tests).
void write_termination_message_to(const std::string& path, const std::string& line);

}  // namespace gj
