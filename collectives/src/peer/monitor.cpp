#include "peer/monitor.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace gj::peer {

namespace {

constexpr const char* kFdVar = "GJ_RANK_MONITOR_FD";

struct State {
  std::mutex m;
  std::condition_variable cv;
  std::map<int, Lost> lost;
  End end = End::Unknown;
  std::string end_reason;
  bool left = false;
  bool failed = false;
  std::string stop_reason;
  std::mutex write_m;
};

State& state() {
  static State* s = new State;  // never destroyed: the reader thread may outlive main()
  return *s;
}

std::atomic<int> g_fd{-1};
std::atomic<bool> g_stop{false};
std::atomic<bool> g_stop_polled{false};
std::once_flag g_started;

void send_raw(const std::string& text) {
  const int fd = g_fd.load();
  if (fd < 0) return;
  std::lock_guard<std::mutex> lock(state().write_m);
  std::size_t at = 0;
  while (at < text.size()) {
    // MSG_NOSIGNAL: a wrapper that is gone must not kill this rank with SIGPIPE.
    const ssize_t n = ::send(fd, text.data() + at, text.size() - at, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the wrapper is gone: nothing to tell
    at += static_cast<std::size_t>(n);
  }
}

void send_line(const std::string& line) { send_raw(line + "\n"); }

void handle(const Line& l) {
  if (l.verb == "lost") {
    const auto r = l.fields.find("rank");
    if (r == l.fields.end()) return;
    char* end = nullptr;
    const long rank = std::strtol(r->second.c_str(), &end, 10);
    if (end == r->second.c_str() || *end != '\0' || rank < 0) return;
    const auto h = l.fields.find("host");
    const auto why = l.fields.find("reason");
    mark_lost(static_cast<int>(rank), h == l.fields.end() ? std::string("unknown") : h->second,
              why == l.fields.end() ? std::string("left the job") : why->second);
  } else if (l.verb == "stop") {
    const auto why = l.fields.find("reason");
    {
      std::lock_guard<std::mutex> lock(state().m);
      if (state().stop_reason.empty()) state().stop_reason = why == l.fields.end() ? std::string("stop requested") : why->second;
    }
    g_stop.store(true, std::memory_order_release);
  } else if (l.verb == "end") {
    const auto s = l.fields.find("status");
    const auto why = l.fields.find("reason");
    std::lock_guard<std::mutex> lock(state().m);
    state().end = s != l.fields.end() && s->second == "ok" ? End::Ok : End::Failed;
    state().end_reason = why == l.fields.end() ? std::string() : why->second;
    state().cv.notify_all();
  }
}

void read_loop(int fd) {
  std::string buffer;
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buffer.append(chunk, static_cast<std::size_t>(n));
    std::size_t nl;
    while ((nl = buffer.find('\n')) != std::string::npos) {
      handle(parse_line(buffer.substr(0, nl)));
      buffer.erase(0, nl + 1);
    }
  }
  // EOF: the wrapper is gone; nobody will send `end`.
  std::lock_guard<std::mutex> lock(state().m);
  if (state().end == End::Unknown) {
    state().end = End::Failed;
    state().end_reason = "the rank wrapper closed the rank socket";
  }
  state().cv.notify_all();
}

void start_once(const std::string& text) {
  if (text.empty()) return;
  const char* value = text.c_str();
  char* end = nullptr;
  const long fd = std::strtol(value, &end, 10);
  struct stat st{};
  if (end == value || *end != '\0' || fd < 0 || fd > 1 << 20 || fstat(static_cast<int>(fd), &st) != 0 ||
      !S_ISSOCK(st.st_mode)) {
    std::fprintf(stderr,
                 "gj-coll warning: %s=%s is not an open socket; running without the rank monitor "
                 "(a lost peer is then seen only on this node)\n",
                 kFdVar, value);
    return;
  }
  // The program's own children must not hold the wrapper's socket open.
  fcntl(static_cast<int>(fd), F_SETFD, fcntl(static_cast<int>(fd), F_GETFD) | FD_CLOEXEC);
  g_fd.store(static_cast<int>(fd));
  std::thread(read_loop, static_cast<int>(fd)).detach();
}

}  // namespace

Line parse_line(const std::string& text) {
  Line l;
  std::size_t at = 0;
  const auto skip = [&] {
    while (at < text.size() && text[at] == ' ') ++at;
  };
  skip();
  const std::size_t verb_end = text.find(' ', at);
  l.verb = text.substr(at, verb_end == std::string::npos ? std::string::npos : verb_end - at);
  at = verb_end == std::string::npos ? text.size() : verb_end;
  while (skip(), at < text.size()) {
    const std::size_t eq = text.find('=', at);
    const std::size_t sp = text.find(' ', at);
    if (eq == std::string::npos || (sp != std::string::npos && sp < eq)) {  // a word without '=': skipped
      at = sp == std::string::npos ? text.size() : sp;
      continue;
    }
    const std::string key = text.substr(at, eq - at);
    if (key == "reason") {
      l.fields[key] = text.substr(eq + 1);
      break;
    }
    const std::size_t value_end = text.find(' ', eq + 1);
    l.fields[key] = text.substr(eq + 1, value_end == std::string::npos ? std::string::npos : value_end - eq - 1);
    at = value_end == std::string::npos ? text.size() : value_end;
  }
  return l;
}

std::string one_line(std::string text) {
  for (char& ch : text) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = ' ';
  }
  return text;
}

void start(const std::map<std::string, std::string>& env) {
  std::call_once(g_started, [&env] {
    g_fail_sink.store(&fail);
    const auto it = env.find(kFdVar);
    start_once(it == env.end() ? std::string() : it->second);
  });
}
bool attached() { return g_fd.load() >= 0; }

std::optional<Lost> lost(int world_rank) {
  std::lock_guard<std::mutex> lock(state().m);
  const auto it = state().lost.find(world_rank);
  if (it == state().lost.end()) return std::nullopt;
  return it->second;
}

void mark_lost(int world_rank, const std::string& host, const std::string& reason) {
  std::lock_guard<std::mutex> lock(state().m);
  if (!state().lost.emplace(world_rank, Lost{host, reason, std::chrono::steady_clock::now()}).second) return;
  g_lost_epoch.fetch_add(1, std::memory_order_acq_rel);
}

void send_text(const std::string& lines) { send_raw(lines); }

void hello(int world_rank, int world_size) {
  send_line("hello rank=" + std::to_string(world_rank) + " size=" + std::to_string(world_size));
}

void leave() {
  {
    std::lock_guard<std::mutex> lock(state().m);
    if (state().left) return;
    state().left = true;
  }
  send_line("leave");
}

void fail(const char* kind, const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(state().m);
    if (state().failed) return;  // the first cause is the one the summary wants
    state().failed = true;
  }
  send_line(std::string("fail kind=") + kind + " reason=" + one_line(reason));
}

bool stop_requested_locally() {
  if (!g_stop_polled.load(std::memory_order_relaxed) && !g_stop_polled.exchange(true)) send_line("stoppoll");
  return g_stop.load(std::memory_order_acquire);
}

std::string stop_reason() {
  std::lock_guard<std::mutex> lock(state().m);
  return state().stop_reason;
}

End wait_end(std::string* reason) {
  if (!attached()) return End::NoMonitor;
  std::unique_lock<std::mutex> lock(state().m);
  state().cv.wait(lock, [] { return state().end != End::Unknown; });
  if (reason != nullptr) *reason = state().end_reason;
  return state().end;
}

bool finish() {
  leave();
  // Without a wrapper nobody says how the job ends; a rank known gone will not come to the fence.
  if (!attached()) return lost_epoch() == 0;
  return wait_end(nullptr) != End::Failed;
}

}  // namespace gj::peer
