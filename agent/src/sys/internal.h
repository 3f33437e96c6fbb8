// Helpers shared by the gj_agent_sys sources; not part of the contract with the agent.
#pragma once

#include <string>

namespace gj {

// Passes one line to the sink set by set_warning_sink (stderr by default).
void warn(const std::string& line);

// Records a background child (the master's sshd) that must not outlive the job.
void register_owned_process(int pid);

}  // namespace gj
