#include "termination_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

namespace gj {

void write_termination_message_to(const std::string& path, const std::string& line) {
  int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return;  // absent outside Kubernetes: best effort by contract
  // Kubernetes keeps at most 4096 bytes; one line, so the pod status stays readable.
  std::string text = line.substr(0, 4000);
  std::replace(text.begin(), text.end(), '\n', ' ');
  text += '\n';
  ssize_t n = ::write(fd, text.data(), text.size());
  (void)n;
  ::close(fd);
}

void write_termination_message(const std::string& line) { write_termination_message_to("/dev/termination-log", line); }

}  // namespace gj
