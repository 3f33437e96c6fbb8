// Finding the program to run the way the shell does, with errors that say what was tried. Reads
// the file system (stat, access) and the PATH variable only; starts nothing.
#pragma once

#include <string>

namespace gj {

// Resolves a command name: a name with '/' is taken as is, otherwise searched in path_env
// (":"-separated; empty entries mean "."). Throws LaunchError 127 (not found) or 126 (found but
// not an executable regular file), naming what was tried.
std::string resolve_executable(const std::string& name, const std::string& path_env);

// $PATH, or the shell's default (defaults::kShellPath) when it is unset or empty.
std::string current_path_env();

}  // namespace gj
