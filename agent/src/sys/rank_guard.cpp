#include "rank_guard.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <fstream>
#include <iterator>
#include <sys/stat.h>
#include <optional>
#include <vector>

#include "child_exit.h"
#include "failure_summary.h"
#include "internal.h"
#include "local_ranks.h"
#include "monitor_line.h"
#include "nccl_log.h"
#include "spawn.h"
#include "termination_log.h"
#include "text.h"
#include "warnings.h"

namespace gj {
namespace {

using Clock = std::chrono::steady_clock;

// How long a wrapper whose program failed stays up before it exits (a termination signal ends
// the wait): the monitor tells the other ranks at once, and their library raises within 2 s.
constexpr auto kFailureLinger = std::chrono::milliseconds(2000);
constexpr auto kPingInterval = std::chrono::seconds(1);
constexpr auto kGpuSampleInterval = std::chrono::seconds(5);
constexpr auto kConnectTimeout = std::chrono::milliseconds(1500);
constexpr std::size_t kTailLineMax = 400;
constexpr std::size_t kStackLinesMax = 200;

volatile sig_atomic_t g_program_pid = 0;
volatile sig_atomic_t g_early_signal = 0;  // arrived before the program's pid was known
volatile sig_atomic_t g_termination = 0;   // a launcher's SIGTERM/SIGINT/SIGHUP/SIGQUIT arrived
volatile sig_atomic_t g_stop_asked = 0;    // this pod's gj-mpirun asked for a stop (local_ranks.h)

extern "C" void note_stop(int) { g_stop_asked = 1; }

extern "C" void pass_on(int sig) {
  if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT) g_termination = sig;
  if (g_program_pid > 0) {
    ::kill(g_program_pid, sig);
  } else {
    g_early_signal = sig;
  }
}

// The signals a launcher sends a rank to end or notify it; ignored ones stay ignored.
void pass_signals_on() {
  for (int sig : kForwardedSignals) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;
    struct sigaction sa {};
    sa.sa_handler = pass_on;
    sa.sa_flags = 0;  // poll returns EINTR, so the loop sees g_termination at once
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

void ask_launcher_to_abort(int pmi_fd, int status) {
  const std::string line = "cmd=abort exitcode=" + std::to_string(status) + "\n";
  ssize_t n = ::send(pmi_fd, line.data(), line.size(), MSG_NOSIGNAL);
  (void)n;
}

// The pod's cgroup v2 directory: this process's "0::<path>" under /sys/fs/cgroup (in a pod with
// its own cgroup namespace the path is "/", the container's cgroup).
std::string cgroup_dir() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line))
    if (line.compare(0, 3, "0::") == 0) return "/sys/fs/cgroup" + (line.size() > 3 && line[3] == '/' && line.size() == 4 ? std::string() : line.substr(3));
  return "/sys/fs/cgroup";
}

std::optional<long long> oom_kills(const std::string& dir) {
  std::ifstream in(dir + "/memory.events");
  std::string key;
  long long value = 0;
  while (in >> key >> value)
    if (key == "oom_kill") return value;
  return std::nullopt;
}

std::string memory_max(const std::string& dir) {
  std::ifstream in(dir + "/memory.max");
  std::string v;
  in >> v;
  return v;
}

// One blocking connect with a deadline; -1 on failure.
int connect_to(const std::string& address, int port) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  int family = AF_INET;
  if (address.find(':') != std::string::npos) {
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&ss);
    if (::inet_pton(AF_INET6, address.c_str(), &a6->sin6_addr) != 1) return -1;
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(static_cast<std::uint16_t>(port));
    len = sizeof *a6;
    family = AF_INET6;
  } else {
    auto* a4 = reinterpret_cast<sockaddr_in*>(&ss);
    if (::inet_pton(AF_INET, address.c_str(), &a4->sin_addr) != 1) return -1;
    a4->sin_family = AF_INET;
    a4->sin_port = htons(static_cast<std::uint16_t>(port));
    len = sizeof *a4;
  }
  const int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 && errno != EINPROGRESS) {
    ::close(fd);
    return -1;
  }
  pollfd p{fd, POLLOUT, 0};
  int err = 0;
  socklen_t elen = sizeof err;
  if (::poll(&p, 1, static_cast<int>(kConnectTimeout.count())) != 1 ||
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0 || err != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// "<port>,<token>,<address>,..." -> a connected socket, the first address that answers.
int connect_monitor(const std::string& endpoint, std::string* token) {
  const auto parts = split(endpoint, ',');
  if (parts.size() < 3) return -1;
  const int port = std::atoi(parts[0].c_str());
  *token = parts[1];
  for (std::size_t i = 2; i < parts.size(); ++i)
    if (const int fd = connect_to(parts[i], port); fd >= 0) return fd;
  return -1;
}

void send_all(int& fd, const std::string& text) {
  if (fd < 0) return;
  std::size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::send(fd, text.data() + off, text.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, 1000) == 1) continue;
    }
    ::close(fd);  // the master is gone; the rank runs on without it
    fd = -1;
    return;
  }
}

void write_raw(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    data += w;
    n -= static_cast<std::size_t>(w);
  }
}

// What the library may tell the master through the wrapper (docs/agent.md "Rank failures",
// "Stop requests", "Hangs").
bool from_library_verb(const std::string& verb) {
  return verb == "hello" || verb == "leave" || verb == "fail" || verb == "stoppoll" || verb == "set" || verb == "prog";
}

// What /proc/<pid>/stat says of a process (proc(5)); state 0 when it cannot be read.
struct ProcSample {
  char state = 0;
  std::int64_t cpu_ms = 0;  // utime + stime
  std::int64_t rss = 0;     // bytes
  int threads = 0;
};

ProcSample read_proc(int pid) {
  ProcSample out;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return out;
  const auto f = split(text.substr(close + 2), ' ');  // f[0] is field 3 (state)
  if (f.size() < 22) return out;
  static const long tick = ::sysconf(_SC_CLK_TCK);
  static const long page = ::sysconf(_SC_PAGESIZE);
  out.state = f[0].empty() ? '?' : f[0][0];
  out.cpu_ms = (std::atoll(f[11].c_str()) + std::atoll(f[12].c_str())) * 1000 / (tick > 0 ? tick : 100);
  out.threads = std::atoi(f[17].c_str());
  out.rss = std::atoll(f[21].c_str()) * page;
  return out;
}

// The peak resident set (VmHWM in /proc/<pid>/status), in bytes; 0 when unknown.
std::int64_t peak_rss(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (in >> key) {
    if (key == "VmHWM:") {
      std::int64_t kb = 0;
      in >> kb;
      return kb * 1024;
    }
    std::string rest;
    std::getline(in, rest);
  }
  return 0;
}

// This pod's network traffic: the bytes received and sent over its interfaces other than
// loopback (/proc/net/dev of the wrapper's network namespace, the pod's).
std::pair<std::int64_t, std::int64_t> network_bytes() {
  std::ifstream in("/proc/net/dev");
  std::string line;
  std::int64_t rx = 0, tx = 0;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name == "lo") continue;
    const auto f = split(line.substr(colon + 1), ' ');
    std::vector<std::string> v;
    for (const auto& x : f)
      if (!x.empty()) v.push_back(x);
    if (v.size() < 9) continue;
    rx += std::atoll(v[0].c_str());
    tx += std::atoll(v[8].c_str());
  }
  return {rx, tx};
}

// The pod's cgroup v2 cpu.stat throttled_usec (0 when unknown) and memory.pressure's
// "some avg10" (the share of the last 10 s some task waited for memory, %).
std::int64_t throttled_usec(const std::string& dir) {
  std::ifstream in(dir + "/cpu.stat");
  std::string key;
  std::int64_t value = 0;
  while (in >> key >> value)
    if (key == "throttled_usec") return value;
  return 0;
}

std::string memory_pressure(const std::string& dir) {
  std::ifstream in(dir + "/memory.pressure");
  std::string word;
  in >> word;  // "some"
  in >> word;  // "avg10=0.00"
  return word.compare(0, 6, "avg10=") == 0 ? word.substr(6) : "0";
}

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

class Wrapper {
 public:
  explicit Wrapper(const RankGuard& g) : g_(g), cgroup_(cgroup_dir()) {}

  int run() {
    oom_before_ = oom_kills(cgroup_);
    struct sigaction sa {};
    sa.sa_handler = note_stop;
    sigemptyset(&sa.sa_mask);
    ::sigaction(stop_signal(), &sa, nullptr);
    note_local_rank(g_.state_dir);
    if (!g_.monitor.empty()) {
      monitor_ = connect_monitor(g_.monitor, &token_);
      if (monitor_ < 0)
        warn("rank " + std::to_string(g_.rank) + ": cannot reach the master's job monitor at " + g_.monitor +
             "; a failure of this rank will not be summarised");
    }
    start_program();
    if (monitor_ >= 0)
      send_all(monitor_, format_monitor_line("start", {{"token", token_}, {"rank", std::to_string(g_.rank)},
                                                       {"size", std::to_string(g_.size)}, {"local", std::to_string(g_.local_rank)},
                                                       {"pod", g_.pod}, {"pid", std::to_string(pid_)}}) + "\n");
    const int st = watch();
    forget_local_rank(g_.state_dir);
    return finish(st);
  }

 private:
  void start_program() {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) throw_syscall_error("socketpair (the rank socket)", errno);
    lib_ = pair[0];
    ::fcntl(lib_, F_SETFD, FD_CLOEXEC);
    int err[2];
    if (::pipe2(err, O_CLOEXEC) != 0) throw_syscall_error("pipe2 (the rank's stderr relay)", errno);
    err_ = err[0];
    // The stack pipe (docs/agent.md "Hangs"): gj's handler writes every thread's Python stack
    // there when this wrapper signals it; the write end is the program's, without FD_CLOEXEC.
    int stack[2];
    if (::pipe(stack) != 0) throw_syscall_error("pipe (the rank's stack dumps)", errno);
    stack_ = stack[0];
    ::fcntl(stack_, F_SETFD, FD_CLOEXEC);
    ::fcntl(stack_, F_SETFL, O_NONBLOCK);
    Environment env = g_.environment;
    // Under hydra with a monitor, the program's PMI connection runs through this wrapper
    // (relay_pmi): hydra kills every rank's process tree, this wrapper's too, on MPI_Abort, so
    // the abort is reported to the master before hydra hears it.
    int pmi[2] = {-1, -1};
    if (g_.pmi_fd >= 0 && monitor_ >= 0 && ::socketpair(AF_UNIX, SOCK_STREAM, 0, pmi) == 0) {
      pmi_up_ = g_.pmi_fd;
      pmi_down_ = pmi[0];
      ::fcntl(pmi_up_, F_SETFD, FD_CLOEXEC);
      ::fcntl(pmi_down_, F_SETFD, FD_CLOEXEC);
      for (auto& var : env)
        if (var.compare(0, 7, "PMI_FD=") == 0) var = "PMI_FD=" + std::to_string(pmi[1]);
    }
    env.push_back("GJ_RANK_MONITOR_FD=" + std::to_string(pair[1]));
    env.push_back("GJ_RANK_STACK_FD=" + std::to_string(stack[1]));
    // Installed before the fork: the child's caught signals return to their defaults at exec,
    // and one arriving before that finds no pid to pass it to.
    pass_signals_on();
    SpawnOptions opt;
    opt.stdin_devnull = false;  // the rank's stdin is the launcher's
    opt.keep_signal_state = true;
    opt.die_with_parent = true;
    opt.environment = &env;
    opt.stderr_fd = err[1];
    ChildProcess program;
    try {
      program = spawn_process(g_.argv, opt);
    } catch (...) {
      ::close(pair[1]);
      ::close(err[1]);
      ::close(stack[1]);
      if (pmi[1] >= 0) ::close(pmi[1]);
      throw;
    }
    ::close(pair[1]);
    ::close(err[1]);
    ::close(stack[1]);
    if (pmi[1] >= 0) ::close(pmi[1]);
    pid_ = program.pid;
    g_program_pid = program.pid;
    // The program's exit wakes watch() at once (a pidfd is readable when its process ends), so
    // the departure time is the exit's, not the next 50 ms poll's: a peer that fails because this
    // program's sockets closed exits a few ms later, and the summary orders ranks by that time.
    // Without pidfd_open (Linux < 5.3) the 50 ms poll still notices the exit.
    pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
    if (const int early = g_early_signal; early != 0) ::kill(program.pid, early);
  }

  void relay_stderr(bool final) {
    char buf[8192];
    for (;;) {
      const ssize_t n = ::read(err_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (n == 0 || errno != EAGAIN) {
          ::close(err_);
          err_ = -1;
        }
        break;
      }
      write_raw(2, buf, static_cast<std::size_t>(n));
      partial_.append(buf, static_cast<std::size_t>(n));
      for (auto& line : take_lines(partial_, kTailLineMax)) keep_line(line);
      if (!final) break;  // one read per wakeup keeps the loop responsive
    }
    if (final && !partial_.empty()) {
      keep_line(partial_.substr(0, kTailLineMax));
      partial_.clear();
    }
  }

  void keep_line(std::string line) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    tail_.push_back(std::move(line));
    if (tail_.size() > 20) tail_.pop_front();
  }

  // The library's lines go to the monitor, with the time they arrived.
  void from_library() {
    char buf[4096];
    const ssize_t n = ::recv(lib_, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) {
      ::close(lib_);
      lib_ = -1;
      return;
    }
    lib_in_.append(buf, static_cast<std::size_t>(n));
    for (const auto& text : take_lines(lib_in_)) {
      auto line = parse_monitor_line(text);
      if (!line || !from_library_verb(line->verb)) continue;
      if (line->verb == "fail") fail_kind_ = line->get("kind").value_or("error"), fail_reason_ = line->reason.value_or("");
      std::vector<std::pair<std::string, std::string>> fields(line->fields.begin(), line->fields.end());
      fields.emplace_back("time", std::to_string(realtime_ns()));
      send_all(monitor_, format_monitor_line(line->verb, fields, line->reason) + "\n");
    }
  }

  // The monitor's lines go to the library; its end (the master gone) ends the program.
  void from_monitor() {
    char buf[4096];
    const ssize_t n = ::recv(monitor_, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) {
      ::close(monitor_);
      monitor_ = -1;
      if (!exited_) end_program("the master's job monitor closed its connection");
      return;
    }
    mon_in_.append(buf, static_cast<std::size_t>(n));
    for (const auto& text : take_lines(mon_in_)) {
      const auto line = parse_monitor_line(text);
      if (!line) continue;
      if (line->verb == "end" && line->get("status") == std::string("failed")) job_failed_ = true;
      if (line->verb == "diag") {
        diagnose();
        continue;
      }
      if (lib_ >= 0) send_all(lib_, text + "\n");
    }
  }

  // One read of the program's PMI connection (or hydra's answer), passed on. An abort (PMI-1
  // `cmd=abort exitcode=N`, PMI-2 `cmd=abort;...;msg=...;`) is reported first: the program's
  // last stderr, `abort code=N`, this pod's termination log; then hydra hears it.
  void relay_pmi(int from, int to, bool from_program) {
    char buf[8192];
    const ssize_t n = ::read(from, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n <= 0) {
      // One side closed: no more relaying. Hydra's connection stays open while this wrapper
      // lives, as it did when the wrapper merely inherited it: hydra takes its close as the
      // rank's end and kills the job, before this wrapper could report the program's exit.
      ::close(pmi_down_);
      pmi_down_ = -1;
      pmi_up_ = -1;
      return;
    }
    if (from_program) {
      pmi_scan_ = pmi_scan_.substr(pmi_scan_.size() > 16 ? pmi_scan_.size() - 16 : 0);
      pmi_scan_.append(buf, static_cast<std::size_t>(n));
      const auto at = pmi_scan_.find("cmd=abort");
      if (at != std::string::npos && !aborted_) {
        // The whole request: up to its end (PMI-1 newline) within what has arrived.
        std::string request = pmi_scan_.substr(at);
        report_abort(request);
      }
    }
    write_raw(to, buf, static_cast<std::size_t>(n));
  }

  void report_abort(const std::string& request) {
    aborted_ = true;
    int code = 1;
    if (const auto e = request.find("exitcode="); e != std::string::npos) {
      code = std::atoi(request.c_str() + e + 9);
    } else if (const auto m = request.find("MPI_Abort("); m != std::string::npos) {
      const auto comma = request.find(',', m);
      if (comma != std::string::npos) code = std::atoi(request.c_str() + comma + 1);
    }
    // What the program wrote before it called MPI_Abort (MPICH's own "Abort(5) ..." line too).
    if (err_ >= 0) {
      pollfd p{err_, POLLIN, 0};
      while (::poll(&p, 1, 20) == 1 && err_ >= 0) {
        const int before = err_;
        relay_stderr(false);
        if (err_ != before) break;
        p = pollfd{err_, POLLIN, 0};
      }
    }
    if (monitor_ >= 0) {
      std::string out;
      for (const auto& line : tail_) out += format_monitor_line("tail", {}, line) + "\n";
      out += format_monitor_line("exit", {{"code", std::to_string(code)}, {"abort", "1"},
                                          {"time", std::to_string(realtime_ns())}}) + "\n";
      send_all(monitor_, out);
    }
    if (g_termination == 0) {
      RankRecord r;
      r.rank = g_.rank;
      r.local_rank = g_.local_rank;
      r.pod = g_.pod;
      r.stderr_tail.assign(tail_.begin(), tail_.end());
      Departure d;
      d.code = code;
      d.mpi_abort = true;
      r.departure = d;
      if (!g_.termination_log.empty()) write_termination_message_to(g_.termination_log, "rank failure: " + rank_short_form(r));
    }
  }

  // NCCL's transport for the master's report (nccl_transport.h), read while the program runs
  // rather than only at its end: NCCL writes it at communicator set-up, and a long job's
  // wrapper may never reach a normal end (SIGKILL at the pod's deletion, a lost pod). Read at
  // each ping when the file grew (NCCL adds channel lines as peers connect), sent when the
  // summary changed; the monitor keeps the last. Past the 1 MiB nccl_summary_of_file reads, no
  // more reads.
  void send_nccl_summary() {
    if (g_.nccl_debug_file.empty() || nccl_size_ >= (1 << 20)) return;
    struct stat st {};
    if (::stat(g_.nccl_debug_file.c_str(), &st) != 0 || st.st_size == nccl_size_) return;
    nccl_size_ = st.st_size;
    const auto summary = nccl_summary_of_file(g_.nccl_debug_file);
    if (!summary || *summary == nccl_sent_) return;
    nccl_sent_ = *summary;
    send_all(monitor_, format_monitor_line("nccl", {}, *summary) + "\n");
  }

  // The program's GPU use, from a child every kGpuSampleInterval (NVML can take a second to
  // initialise and may crash in a static binary: never in this loop). A child that takes
  // longer than 10 s is killed; its sample is skipped.
  void sample_gpu() {
    if (g_.gpu_use_command.empty() || gpu_off_) return;
    const auto now = Clock::now();
    if (gpu_child_.pid > 0) {
      char buf[512];
      ssize_t n;
      while ((n = ::read(gpu_child_.output_fd, buf, sizeof buf)) > 0) gpu_out_.append(buf, static_cast<std::size_t>(n));
      if (now - gpu_started_ > std::chrono::seconds(10)) ::kill(gpu_child_.pid, SIGKILL);
      if (!poll_wait_status(gpu_child_.pid)) return;
      while ((n = ::read(gpu_child_.output_fd, buf, sizeof buf)) > 0) gpu_out_.append(buf, static_cast<std::size_t>(n));
      ::close(gpu_child_.output_fd);
      gpu_child_ = {};
      for (const auto& text : take_lines(gpu_out_)) {
        const auto line = parse_monitor_line(text);
        if (!line || line->verb != "gpu" || line->get("none")) continue;
        gpu_mem_ = line->get("devices") == "0" ? -1 : line->number("mem").value_or(-1);
        gpu_util_ = gpu_mem_ < 0 ? "" : line->get("util").value_or("");
      }
      gpu_out_.clear();
      next_gpu_ = now + kGpuSampleInterval;
      return;
    }
    if (now < next_gpu_) return;
    next_gpu_ = now + kGpuSampleInterval;
    std::vector<std::string> argv = g_.gpu_use_command;
    argv.push_back(std::to_string(pid_));
    SpawnOptions o;
    o.capture_output = true;
    o.die_with_parent = true;
    try {
      gpu_child_ = spawn_process(argv, o);
      gpu_started_ = now;
    } catch (const std::exception&) {
      gpu_off_ = true;  // no GPU figures; the rank runs on
      gpu_child_ = {};
    }
  }

  // `ping` with the program's process state, CPU time and memory (the master's status lines,
  // its hang diagnosis and the end-of-job lines); the samples also give CPU use over 5 s.
  std::string ping_line() {
    const ProcSample p = read_proc(pid_);
    if (p.state == 0) return "ping";
    samples_.push_back({Clock::now(), p.cpu_ms});
    while (samples_.size() > 6) samples_.pop_front();
    const auto [rx, tx] = network_bytes();
    return format_monitor_line("ping", {{"state", std::string(1, p.state)}, {"cpu", std::to_string(p.cpu_ms)},
                                        {"rss", std::to_string(p.rss)}, {"hwm", std::to_string(peak_rss(pid_))},
                                        {"rx", std::to_string(rx)}, {"tx", std::to_string(tx)},
                                        {"thr", std::to_string(throttled_usec(cgroup_))},
                                        {"psi", memory_pressure(cgroup_)}}) +
           (gpu_mem_ >= 0 ? " gmem=" + std::to_string(gpu_mem_) + " gutil=" + gpu_util_ : std::string());
  }

  // The stack pipe: the handler's announcement, then dumps (kept only while diagnose() asks).
  // Returns whether anything was read.
  bool read_stacks() {
    char buf[8192];
    bool any = false;
    for (;;) {
      const ssize_t n = ::read(stack_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (n == 0) {
          ::close(stack_);
          stack_ = -1;
        }
        return any;
      }
      any = true;
      stack_in_.append(buf, static_cast<std::size_t>(n));
      for (auto& line : take_lines(stack_in_, kTailLineMax)) {
        if (stack_signal_ == 0 && line.compare(0, 16, "gj-stack signal=") == 0) {
          stack_signal_ = std::atoi(line.c_str() + 16);
          continue;
        }
        if (collecting_ && stack_lines_.size() < kStackLinesMax) stack_lines_.push_back(line);
      }
    }
  }

  // The master asks what this rank is doing (it holds up a collective): its process state, CPU
  // use over the last seconds, kernel wait channel, and, from a program with gj's handler, every
  // thread's Python stack. Answered as `diag ...`, `stack reason=<line>`..., `diagend reason=...`.
  void diagnose() {
    const ProcSample p = read_proc(pid_);
    std::string cpu = "?";
    if (p.state != 0 && !samples_.empty()) {
      const auto span = std::chrono::duration<double>(Clock::now() - samples_.front().first).count();
      if (span > 0.5)
        cpu = std::to_string(static_cast<int>(static_cast<double>(p.cpu_ms - samples_.front().second) / 10.0 / span + 0.5));
    }
    const std::string wchan = read_first_line("/proc/" + std::to_string(pid_) + "/wchan");
    std::string note;
    stack_lines_.clear();
    if (stack_signal_ <= 0) {
      note = "no Python stack: the program did not install gj's stack handler (it does not use gj, or has not called init yet)";
    } else if (p.state == 'T' || p.state == 't') {
      note = "no Python stack: the process is stopped (SIGSTOP, SIGTSTP or a debugger) and cannot run its handler";
    } else if (p.state == 'Z' || p.state == 0) {
      note = "no Python stack: the process has exited";
    } else {
      if (stack_ >= 0) read_stacks();  // what is left of an earlier dump
      stack_lines_.clear();
      collecting_ = true;
      ::kill(pid_, stack_signal_);
      // faulthandler writes the whole dump at once; a short quiet after data ends it.
      const auto until = Clock::now() + std::chrono::milliseconds(2000);
      auto quiet_since = Clock::now();
      while (stack_ >= 0 && Clock::now() < until) {
        pollfd pf{stack_, POLLIN, 0};
        ::poll(&pf, 1, 50);
        if (read_stacks()) quiet_since = Clock::now();
        else if (!stack_lines_.empty() && Clock::now() - quiet_since > std::chrono::milliseconds(300)) break;
      }
      if (!stack_in_.empty() && stack_lines_.size() < kStackLinesMax) stack_lines_.push_back(stack_in_);
      stack_in_.clear();
      collecting_ = false;
      if (stack_lines_.empty()) note = "no Python stack: the handler did not answer within 2 s (the interpreter may be blocked)";
    }
    std::string out = format_monitor_line("diag", {{"state", p.state == 0 ? std::string("?") : std::string(1, p.state)},
                                                   {"cpu", cpu}, {"wchan", wchan.empty() ? "-" : wchan},
                                                   {"threads", std::to_string(p.threads)}}) + "\n";
    for (const auto& line : stack_lines_) out += format_monitor_line("stack", {}, line) + "\n";
    out += format_monitor_line("diagend", {}, note) + "\n";
    send_all(monitor_, out);
  }

  void end_program(const std::string& why) {
    if (kill_at_) return;
    // On the rank's stderr (the pod log, through the launcher): why a program that did not fail
    // was ended.
    warn("rank " + std::to_string(g_.rank) + ": " + why + "; ending the program (SIGTERM)");
    ::kill(pid_, SIGTERM);
    kill_at_ = Clock::now() + std::chrono::seconds(2);
  }

  int watch() {
    auto next_ping = Clock::now() + kPingInterval;
    for (;;) {
      if (const auto st = poll_wait_status(pid_)) {
        exited_ = true;
        departure_ns_ = realtime_ns();
        g_program_pid = 0;
        return *st;
      }
      if (kill_at_ && Clock::now() >= *kill_at_) ::kill(pid_, SIGKILL);
      pollfd fds[7] = {{err_, POLLIN, 0},   {lib_, POLLIN, 0},      {monitor_, POLLIN, 0}, {pidfd_, POLLIN, 0},
                       {stack_, POLLIN, 0}, {pmi_down_, POLLIN, 0}, {pmi_up_, POLLIN, 0}};
      ::poll(fds, 7, 50);
      if (pmi_down_ >= 0 && fds[5].revents != 0) relay_pmi(pmi_down_, pmi_up_, true);
      if (pmi_up_ >= 0 && fds[6].revents != 0) relay_pmi(pmi_up_, pmi_down_, false);
      if (pidfd_ >= 0 && fds[3].revents != 0) continue;  // exited: take its time first; finish() reads the rest
      if (err_ >= 0 && fds[0].revents != 0) relay_stderr(false);
      if (lib_ >= 0 && fds[1].revents != 0) from_library();
      if (monitor_ >= 0 && fds[2].revents != 0) from_monitor();
      if (stack_ >= 0 && fds[4].revents != 0) read_stacks();
      if (g_stop_asked == 1) {  // once: the whole job is asked through the master, this program at once
        g_stop_asked = 2;
        const std::string why = "pod " + g_.pod + " is being stopped (its gj-mpirun received a termination signal)";
        send_all(monitor_, format_monitor_line("stopreq", {}, why) + "\n");
        if (lib_ >= 0) send_all(lib_, format_monitor_line("stop", {}, why) + "\n");
      }
      if (monitor_ >= 0) sample_gpu();
      if (monitor_ >= 0 && Clock::now() >= next_ping) {
        send_nccl_summary();
        send_all(monitor_, ping_line() + "\n");
        next_ping = Clock::now() + kPingInterval;
      }
    }
  }

  int finish(int st) {
    if (pidfd_ >= 0) ::close(pidfd_);
    pidfd_ = -1;
    // What the program wrote last (its traceback) is in the pipe; its own children may hold the
    // pipe open, so read what is there, not to EOF.
    if (err_ >= 0) {
      ::fcntl(err_, F_SETFL, O_NONBLOCK);
      relay_stderr(true);
    }
    if (lib_ >= 0) from_library();  // a `leave` or `fail` sent just before the exit
    const auto oom_after = oom_kills(cgroup_);
    const bool oom = oom_before_ && oom_after && *oom_after > *oom_before_;
    const bool failed = !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    if (monitor_ >= 0 && !aborted_) {
      send_nccl_summary();
      std::string out;
      for (const auto& line : tail_) out += format_monitor_line("tail", {}, line) + "\n";
      std::vector<std::pair<std::string, std::string>> fields;
      if (WIFSIGNALED(st)) fields.emplace_back("signal", std::to_string(WTERMSIG(st)));
      else fields.emplace_back("code", std::to_string(WIFEXITED(st) ? WEXITSTATUS(st) : 1));
      fields.emplace_back("time", std::to_string(departure_ns_));
      fields.emplace_back("oom", oom ? "1" : "0");
      fields.emplace_back("memmax", memory_max(cgroup_));
      out += format_monitor_line("exit", fields) + "\n";
      send_all(monitor_, out);
    }
    if (failed && !job_failed_ && !aborted_ && g_termination == 0) write_own_termination_log(st, oom);
    if (failed && monitor_ >= 0) linger();
    if (failed && monitor_ < 0 && g_.pmi_fd >= 0) ask_launcher_to_abort(g_.pmi_fd, shell_status(st));
    if (WIFSIGNALED(st)) {
      const int sig = WTERMSIG(st);
      ::signal(sig, SIG_DFL);
      sigset_t only;
      sigemptyset(&only);
      sigaddset(&only, sig);
      ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
      ::raise(sig);
    }
    return shell_status(st);
  }

  // This rank failed first as far as this pod knows: its line for `kubectl describe pod`.
  void write_own_termination_log(int st, bool oom) {
    if (g_.termination_log.empty()) return;
    RankRecord r;
    r.rank = g_.rank;
    r.local_rank = g_.local_rank;
    r.pod = g_.pod;
    r.fail_kind = fail_kind_;
    r.fail_reason = fail_reason_;
    r.stderr_tail.assign(tail_.begin(), tail_.end());
    Departure d;
    d.kind = WIFSIGNALED(st) ? Departure::Kind::Signalled : Departure::Kind::Exited;
    d.code = WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st);
    d.oom_kill = oom;
    d.memory_max = memory_max(cgroup_);
    r.departure = d;
    write_termination_message_to(g_.termination_log, "rank failure: " + rank_short_form(r));
  }

  // Up to kFailureLinger, until the monitor closes or a launcher's termination signal comes.
  void linger() {
    const auto until = Clock::now() + kFailureLinger;
    while (monitor_ >= 0 && g_termination == 0 && Clock::now() < until) {
      pollfd p{monitor_, POLLIN, 0};
      if (::poll(&p, 1, 50) == 1) {
        char buf[512];
        const ssize_t n = ::recv(monitor_, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) break;
      }
    }
  }

  const RankGuard& g_;
  std::string cgroup_;
  std::optional<long long> oom_before_;
  int monitor_ = -1;
  int lib_ = -1;
  int err_ = -1;
  int pid_ = -1;
  int pidfd_ = -1;  // the program's pidfd, or -1 (pidfd_open unavailable)
  int stack_ = -1;  // the stack pipe's read end
  int pmi_up_ = -1;    // hydra's PMI connection, relayed (relay_pmi), or -1
  int pmi_down_ = -1;  // the program's end of the relay, or -1
  std::string pmi_scan_;
  bool aborted_ = false;  // the program asked hydra to abort: reported
  int stack_signal_ = 0;  // the signal gj's handler announced, 0 before (or without) one
  bool collecting_ = false;
  std::string stack_in_;
  std::vector<std::string> stack_lines_;
  std::deque<std::pair<Clock::time_point, std::int64_t>> samples_;  // (when, CPU ms), one a second
  std::string token_;
  ChildProcess gpu_child_;                    // the GPU sample in flight (pid -1: none)
  std::string gpu_out_;
  Clock::time_point gpu_started_{}, next_gpu_{};
  std::int64_t gpu_mem_ = -1;                 // the last sample; -1: none (or no device lists the pid)
  std::string gpu_util_;
  bool gpu_off_ = false;
  off_t nccl_size_ = 0;     // NCCL_DEBUG_FILE's size when last read
  std::string nccl_sent_;   // the summary last sent
  std::string partial_, lib_in_, mon_in_;
  std::deque<std::string> tail_;
  std::string fail_kind_, fail_reason_;
  bool exited_ = false;
  bool job_failed_ = false;
  std::int64_t departure_ns_ = 0;
  std::optional<Clock::time_point> kill_at_;
};

}  // namespace

int run_rank_guarded(const RankGuard& guard) { return Wrapper(guard).run(); }

}  // namespace gj
