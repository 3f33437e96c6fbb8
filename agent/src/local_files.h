// The agent's own small side effects on the local filesystem (everything else that touches the
// system lives in sys/): reading host files, checking the training script and interpreter,
// writing the hostfile. main() calls these; the planning core never does.
#pragma once

#include <optional>
#include <string>

#include "env_map.h"

namespace gj {

// Whole file, or nullopt when it does not exist. Throws AgentError (kBadEnvironment) naming
// `what` and the system error otherwise.
std::optional<std::string> read_text_file(const std::string& path, const std::string& what);

// The script as every rank should run it: an absolute path (relative paths are made
// absolute against the current directory; a bare name found neither here nor in PATH is
// an error). Throws AgentError: 127 when missing, 126 when not runnable (not executable and
// not .py, or a directory).
std::string resolve_script(const std::string& script, const EnvMap& env);

// Throws AgentError 127 when `program` (a path, or a name looked up in PATH) is not found.
void require_program(const std::string& program, const std::string& what, const EnvMap& env);

// Writes content to path with `mode` (creating the parent directory 0700 when missing),
// atomically (temp file + rename). Throws AgentError (kSetupFailed).
void write_private_file(const std::string& path, const std::string& content, unsigned mode);

}  // namespace gj
