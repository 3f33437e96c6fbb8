#include "path_lookup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "defaults.h"
#include "exit_codes.h"
#include "internal.h"

namespace gj {
namespace {

// True when p is an executable regular file; otherwise *why says what it is instead (left
// empty when p does not exist).
bool is_runnable(const std::string& p, std::string* why) {
  struct stat st{};
  if (::stat(p.c_str(), &st) != 0) return false;
  if (S_ISDIR(st.st_mode)) {
    *why = p + " is a directory, not a program";
    return false;
  }
  if (!S_ISREG(st.st_mode) || ::access(p.c_str(), X_OK) != 0) {
    *why = p + " is not executable (mode " + mode_text(st.st_mode) + "); chmod +x it or run it through its interpreter";
    return false;
  }
  return true;
}

}  // namespace

std::string current_path_env() {
  const char* p = std::getenv("PATH");
  return (p != nullptr && *p != '\0') ? p : defaults::kShellPath;
}

std::string resolve_executable(const std::string& name, const std::string& path_env) {
  if (name.empty()) throw_launch_error(exit_code::kNotFound, "cannot run an empty command name; give the program to run");
  std::string why;
  if (name.find('/') != std::string::npos) {
    if (is_runnable(name, &why)) return name;
    if (!why.empty()) throw_launch_error(exit_code::kNotExecutable, why);
    throw_launch_error(exit_code::kNotFound, name + ": not found (" + std::strerror(errno) + "); check the path");
  }
  std::size_t start = 0;
  while (start <= path_env.size()) {
    std::size_t end = path_env.find(':', start);
    if (end == std::string::npos) end = path_env.size();
    std::string dir = path_env.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    std::string candidate_why;
    if (is_runnable(candidate, &candidate_why)) return candidate;
    if (why.empty()) why = candidate_why;
    start = end + 1;
  }
  if (!why.empty()) throw_launch_error(exit_code::kNotExecutable, name + ": found in PATH but " + why);
  throw_launch_error(exit_code::kNotFound,
                     name + ": not found in PATH=" + path_env + "; install it in the image or give an absolute path");
}

}  // namespace gj
