// Helpers shared by the gj_agent_sys sources; not part of the contract with the agent.
#pragma once

#include <string>
#include <sys/types.h>

namespace gj {

// Passes one line to the sink set by set_warning_sink (stderr by default).
void warn(const std::string& line);

// $PATH, or the shell's default when it is unset or empty.
std::string current_path_env();

// "0644": a file mode as people read it in messages.
std::string mode_text(mode_t mode);

// The last non-empty line of a program's output (the one that usually says what went wrong).
std::string last_line(std::string text);

// Records a background child (the master's sshd) that must not outlive the job.
void register_owned_process(int pid);

}  // namespace gj
