#include "local_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent_error.h"
#include "exit_codes.h"

namespace gj {
namespace {

std::string errno_text() { return std::strerror(errno); }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string current_dir() {
  char buf[4096];
  if (getcwd(buf, sizeof buf) == nullptr)
    throw AgentError{exit_code::kInternal, "getcwd failed: " + errno_text()};
  return buf;
}

bool is_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// First executable regular file named `name` in PATH, like execvp.
std::optional<std::string> find_in_path(const std::string& name, const EnvMap& env) {
  const auto it = env.find("PATH");
  const std::string path = it != env.end() ? it->second : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= path.size()) {
    auto end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    const std::string dir = end > start ? path.substr(start, end - start) : ".";
    const std::string candidate = dir + "/" + name;
    if (is_file(candidate) && access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> read_text_file(const std::string& path, const std::string& what) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw AgentError{exit_code::kBadEnvironment, what + " " + path + ": open failed: " + errno_text()};
  }
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string err = errno_text();
      close(fd);
      throw AgentError{exit_code::kBadEnvironment, what + " " + path + ": read failed: " + err};
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  return out;
}

std::string resolve_script(const std::string& script, const EnvMap& env) {
  std::string path;
  if (script.find('/') != std::string::npos) {
    path = script[0] == '/' ? script : current_dir() + "/" + script;
  } else if (access(script.c_str(), F_OK) == 0) {
    path = current_dir() + "/" + script;
  } else if (const auto found = find_in_path(script, env)) {
    return *found;
  } else {
    throw AgentError{exit_code::kNotFound, "training script \"" + script +
                                               "\" not found (neither in the current directory nor in PATH); "
                                               "pass the absolute path of the entry file in the image"};
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    throw AgentError{exit_code::kNotFound, "training script " + path + " not found (" + errno_text() +
                                               "); pass the absolute path of the entry file in the image"};
  if (!S_ISREG(st.st_mode))
    throw AgentError{exit_code::kNotExecutable, "training script " + path + " is not a regular file; name the entry file"};
  if (ends_with(path, ".py")) return path;  // run under the interpreter; needs no x bit
  if (access(path.c_str(), X_OK) != 0)
    throw AgentError{exit_code::kNotExecutable, "training script " + path +
                                                    " is not executable; chmod +x it, or use a .py entry file"};
  return path;
}

void require_program(const std::string& program, const std::string& what, const EnvMap& env) {
  const bool found = program.find('/') != std::string::npos
                         ? is_file(program)
                         : find_in_path(program, env).has_value();
  if (!found)
    throw AgentError{exit_code::kNotFound, what + "=\"" + program + "\" not found" +
                                               (program.find('/') == std::string::npos ? " in PATH" : "") +
                                               "; install it in the image or point " + what + " at it"};
}

void write_private_file(const std::string& path, const std::string& content, unsigned mode) {
  const auto slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    const std::string dir = path.substr(0, slash);
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      throw AgentError{exit_code::kSetupFailed, "mkdir " + dir + " failed: " + errno_text() + "; check GJ_STATE_DIR"};
  }
  const std::string tmp = path + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) throw AgentError{exit_code::kSetupFailed, "open " + tmp + " failed: " + errno_text() + "; check GJ_STATE_DIR"};
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string err = errno_text();
      close(fd);
      throw AgentError{exit_code::kSetupFailed, "write " + tmp + " failed: " + err};
    }
    done += static_cast<std::size_t>(n);
  }
  if (fchmod(fd, mode) != 0 || close(fd) != 0)
    throw AgentError{exit_code::kSetupFailed, "fchmod/close " + tmp + " failed: " + errno_text()};
  if (rename(tmp.c_str(), path.c_str()) != 0)
    throw AgentError{exit_code::kSetupFailed, "rename " + tmp + " -> " + path + " failed: " + errno_text()};
}

}  // namespace gj
