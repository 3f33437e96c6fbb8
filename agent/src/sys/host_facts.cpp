#include "host_facts.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "agent_error.h"
#include "exit_codes.h"
#include "private_files.h"

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
  std::ifstream in(state_dir + "/pod_path", std::ios::binary);
  if (!in) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.empty() || text.size() > 64 * 1024) return std::nullopt;
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
