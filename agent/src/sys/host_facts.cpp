#include "host_facts.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "agent_error.h"
#include "exit_codes.h"
#include "private_files.h"
#include "warnings.h"

namespace gj {

std::string self_executable() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0)
    throw LaunchError{exit_code::kInternal, std::string("readlink /proc/self/exe failed: ") + std::strerror(errno) +
                                                "; mount /proc in the container or pass --no-rank-env"};
  return std::string(buf, static_cast<std::size_t>(n));
}

void write_pod_path(const std::string& state_dir, const std::string& path) {
  ensure_private_dir(state_dir, "GJ_STATE_DIR");
  write_private_file(state_dir + "/pod_path", path, 0600);
}

std::optional<std::string> read_pod_path(const std::string& state_dir) {
  // Every rank reads this file: anything but a small regular file (a FIFO would block the rank,
  // a link to /dev/zero would never end) is refused before a byte is read.
  constexpr std::size_t kMaxBytes = 64 * 1024;
  const std::string path = state_dir + "/pod_path";
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) warn("not using " + path + " (the pod's PATH for ranks): open failed: " + std::strerror(errno));
    return std::nullopt;
  }
  struct stat st {};
  std::string text;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::size_t>(st.st_size) > kMaxBytes) {
    warn("not using " + path + " (the pod's PATH for ranks): not a regular file of at most 64 KiB; " +
         "remove it and restart the worker pod");
  } else {
    char buf[4096];
    ssize_t n;
    while (text.size() <= kMaxBytes && (n = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > kMaxBytes) text.clear();
  }
  ::close(fd);
  if (text.empty()) return std::nullopt;
  return text;
}

std::string local_host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0)
    throw LaunchError{exit_code::kInternal, std::string("gethostname failed: ") + std::strerror(errno)};
  return buf;
}

int free_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    throw LaunchError{exit_code::kSetupFailed, std::string("socket(AF_INET) for MASTER_PORT failed: ") + std::strerror(errno)};
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    const int e = errno;
    ::close(fd);
    throw LaunchError{exit_code::kSetupFailed, std::string("bind/getsockname for a free MASTER_PORT failed: ") +
                                                   std::strerror(e) + "; set MASTER_PORT yourself"};
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace gj
