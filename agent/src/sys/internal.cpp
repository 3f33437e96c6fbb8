#include "internal.h"

#include <time.h>

#include <cstdio>
#include <cstring>
#include <utility>

#include "agent_error.h"
#include "exit_codes.h"

namespace gj {

void throw_launch_error(int code, std::string message) { throw LaunchError{code, std::move(message)}; }

void throw_syscall_error(const std::string& call, int err, const std::string& fix) {
  std::string msg = call + " failed: " + std::strerror(err);
  if (!fix.empty()) msg += "; " + fix;
  throw_launch_error(exit_code::kInternal, msg);
}

std::int64_t realtime_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::string mode_text(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

std::string last_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  auto nl = text.find_last_of('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

}  // namespace gj
