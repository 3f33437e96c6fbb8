// Default values that more than one part of the agent needs (the settings table in settings.cpp
// shows them in --help and the README; sshd, ssh and the readiness gate start from them), kept
// here so that each default is written once.
#pragma once

namespace gj::defaults {

inline constexpr int kSshPort = 22;
inline constexpr long kSshConnectTimeoutS = 10;
inline constexpr long kReadyTimeoutS = 300;
inline constexpr const char* kSshd = "/usr/sbin/sshd";
inline constexpr const char* kSshKeygen = "ssh-keygen";
inline constexpr const char* kStateDir = "/run/gj-mpirun";
inline constexpr const char* kSshDir = "/root/.ssh";
// The search path the shell uses when PATH is unset or empty.
inline constexpr const char* kShellPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

}  // namespace gj::defaults
