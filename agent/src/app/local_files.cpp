#include "text.h"
#include "local_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "agent_error.h"
#include "defaults.h"
#include "quote.h"
#include "exit_codes.h"
#include "sys/path_lookup.h"

namespace gj {
namespace {

std::string errno_text() { return std::strerror(errno); }

std::string current_dir() {
  char buf[4096];
  if (getcwd(buf, sizeof buf) == nullptr) throw AgentError{exit_code::kInternal, "getcwd failed: " + errno_text()};
  return buf;
}

std::string path_of(const EnvMap& env) { return env_value(env, "PATH").value_or(defaults::kShellPath); }

}  // namespace

std::optional<std::string> read_text_file(const std::string& path, const std::string& what) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw AgentError{exit_code::kBadEnvironment, what + " " + quoted_value(path) + ": open failed: " + errno_text()};
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    throw AgentError{exit_code::kBadEnvironment, what + " " + quoted_value(path) +
                                                     " is not a regular file (a FIFO, device or directory); point it at the host file"};
  }
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string err = errno_text();
      close(fd);
      throw AgentError{exit_code::kBadEnvironment, what + " " + quoted_value(path) + ": read failed: " + err};
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > kMaxTextFileBytes) {
      close(fd);
      throw AgentError{exit_code::kBadEnvironment, what + " " + quoted_value(path) + " is larger than " +
                                                       std::to_string(kMaxTextFileBytes >> 20) +
                                                       " MiB; a host file of a million hosts is smaller"};
    }
  }
  close(fd);
  return out;
}

std::string resolve_script(const std::string& script, const EnvMap& env) {
  const std::string fix = "; pass the absolute path of the entry file in the image";
  std::string path;
  if (script.find('/') != std::string::npos) {
    // Lexically normal ("/app/./a/../t.sh" -> "/app/t.sh"): the path every rank sees in ps/logs.
    path = std::filesystem::path(script[0] == '/' ? script : current_dir() + "/" + script).lexically_normal().string();
  } else if (access(script.c_str(), F_OK) == 0) {
    path = current_dir() + "/" + script;
  } else {
    try {
      return resolve_executable(script, path_of(env));
    } catch (const LaunchError& e) {
      throw AgentError{e.exit_code, "training script " + quoted_value(script) + " is not in the current directory and " +
                                        e.message + fix};
    }
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    throw AgentError{exit_code::kNotFound, "training script " + quoted_value(path) + " not found (" + errno_text() + ")" + fix};
  if (!S_ISREG(st.st_mode))
    throw AgentError{exit_code::kNotExecutable, "training script " + quoted_value(path) + " is not a regular file" + fix};
  if (ends_with(path, ".py")) return path;  // runs under the interpreter; needs no x bit
  if (access(path.c_str(), X_OK) != 0)
    throw AgentError{exit_code::kNotExecutable,
                     "training script " + quoted_value(path) + " is not executable; chmod +x it, or use a .py entry file"};
  return path;
}

void require_program(const std::string& program, const std::string& what, const EnvMap& env) {
  try {
    resolve_executable(program, path_of(env));
  } catch (const LaunchError& e) {
    throw AgentError{e.exit_code, quoted_setting(what, program) + ": " + e.message + "; install it in the image or point " +
                                      what + " at it"};
  }
}

}  // namespace gj
