// The agent's own small reads of the local filesystem (everything that writes or spawns lives
// in sys/): reading host files, checking the training script and the interpreter. main's role
// runs call these; the planning core never does.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "env_map.h"

namespace gj {

// Host files are read whole; 100,000 hosts of 64 bytes are 6.4 MB.
inline constexpr std::size_t kMaxTextFileBytes = 64u << 20;

// Whole file (a regular file of at most kMaxTextFileBytes), or nullopt when it does not exist. Throws AgentError (kBadEnvironment) naming
// `what` and the system error otherwise.
std::optional<std::string> read_text_file(const std::string& path, const std::string& what);

// The script as every rank should run it: an absolute path (relative paths are made absolute
// against the current directory; a bare name not in the current directory is looked up in
// PATH). Throws AgentError: 127 when missing, 126 when not runnable (not executable and not
// .py, or not a regular file).
std::string resolve_script(const std::string& script, const EnvMap& env);

// Throws AgentError 127/126 when `program` (a path, or a name looked up in PATH) cannot run;
// `what` names the setting ("--python/GJ_PYTHON").
void require_program(const std::string& program, const std::string& what, const EnvMap& env);

}  // namespace gj
