// run_job (exec and supervise), spawn/capture, resolve_executable, termination message.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "exit_codes.h"
#include "host_facts.h"
#include "agent_error.h"
#include "capture.h"
#include "child_exit.h"
#include "path_lookup.h"
#include "spawn.h"
#include "supervise.h"
#include "termination_log.h"
#include "temp_dir.h"

using gj::test::slurp;
using gj::test::TempDir;

namespace {

const std::string kHelper = GJ_SYS_TEST_HELPER;

std::vector<std::string> helper(std::vector<std::string> args) {
  args.insert(args.begin(), kHelper);
  return args;
}

bool wait_for_file(const std::string& path, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (access(path.c_str(), F_OK) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Running, not a zombie (a killed process whose new parent has not reaped it yet is gone).
bool running(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

// Waits up to `limit` for pid to stop running.
bool ends_within(int pid, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (running(pid) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return !running(pid);
}

void write_file(const std::string& path, const std::string& text, mode_t mode) {
  std::ofstream(path) << text;
  chmod(path.c_str(), mode);
}

}  // namespace

TEST_CASE("supervised job: exit status is the child's code - or 128+N when killed by N") {
  struct Row {
    std::vector<std::string> child;
    int expected;
  };
  auto row = GENERATE(Row{{"exit", "0"}, 0}, Row{{"exit", "1"}, 1}, Row{{"exit", "42"}, 42},
                      Row{{"signal", std::to_string(SIGKILL)}, 128 + SIGKILL},
                      Row{{"signal", std::to_string(SIGTERM)}, 128 + SIGTERM},
                      Row{{"signal", std::to_string(SIGSEGV)}, 128 + SIGSEGV});
  std::vector<std::string> args{"supervise", kHelper};
  args.insert(args.end(), row.child.begin(), row.child.end());
  CAPTURE(row.child, row.expected);
  CHECK(gj::run_and_capture(helper(args)).status == row.expected);
}

TEST_CASE("exec mode: the process becomes the job") {
  CHECK(gj::run_and_capture(helper({"exec", kHelper, "exit", "7"})).status == 7);
  CHECK(gj::run_and_capture(helper({"exec", kHelper, "signal", std::to_string(SIGTERM)})).status == 128 + SIGTERM);
}

TEST_CASE("exec failures: 127 when not found - 126 when not executable - message names the path") {
  TempDir dir;
  write_file(dir / "plain.sh", "#!/bin/sh\nexit 0\n", 0644);
  write_file(dir / "no-interpreter.sh", "#!/nonexistent/interpreter\n", 0755);
  struct Row {
    std::string command;
    int expected;
    std::string in_message;
  };
  const std::string d = dir.path();
  // A plain loop, not GENERATE: the files live in this run's temporary directory.
  const std::vector<Row> rows{{"gj-no-such-program-xyz", 127, "gj-no-such-program-xyz: not found in PATH="},
                              {d + "/missing", 127, d + "/missing"},
                              {d + "/plain.sh", 126, "plain.sh is not executable (mode 0644)"},
                              {d, 126, "is a directory"},
                              {d + "/no-interpreter.sh", 127, "#! interpreter"}};
  for (const auto& row : rows) {
    for (std::string mode : {"supervise", "exec"}) {
      CAPTURE(mode, row.command);
      auto r = gj::run_and_capture(helper({mode, row.command}));
      CHECK(r.status == row.expected);
      CHECK_THAT(r.output, Catch::Contains(row.in_message));
    }
  }
}

TEST_CASE("SIGTERM to the supervisor reaches the job's whole process group") {
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    TempDir dir;
    gj::ChildProcess sup = gj::spawn_process(helper({"supervise", kHelper, "group", dir.path()}), {});
    REQUIRE(wait_for_file(dir / "child.pid", std::chrono::seconds(10)));
    REQUIRE(wait_for_file(dir / "grandchild.pid", std::chrono::seconds(10)));
    REQUIRE(kill(sup.pid, sig) == 0);
    int status = gj::wait_exit(sup.pid);
    CAPTURE(sig);
    if (sig == SIGTERM) {
      // Our helper turns SIGTERM into a marker file and then dies of it: both processes got it.
      CHECK(status == 128 + SIGTERM);
      CHECK(access((dir / "child.term").c_str(), F_OK) == 0);
      CHECK(access((dir / "grandchild.term").c_str(), F_OK) == 0);
    } else {
      CHECK(status == 128 + sig);  // default action: the job dies of the forwarded signal
    }
    // Nothing of the job's group survives the supervisor.
    int grandchild = std::stoi(slurp(dir / "grandchild.pid"));
    CHECK(kill(grandchild, 0) != 0);
  }
}

TEST_CASE("a job that exits non-zero after a forwarded SIGTERM reports 128+SIGTERM, like mpiexec") {
  // mpiexec traps SIGTERM, tears the ranks down and exits 1; the pod must still say "killed by
  // SIGTERM" (143). A job that handles the signal and exits 0 keeps its 0.
  struct Row {
    std::string on_term;
    int expected;
  };
  for (const Row& row : {Row{"exit 1", 128 + SIGTERM}, Row{"exit 0", 0}}) {
    TempDir dir;
    const std::string ready = dir / "ready";
    const std::string script = "trap '" + row.on_term + "' TERM; : > " + ready + "; while :; do sleep 0.05; done";
    gj::ChildProcess sup = gj::spawn_process(helper({"supervise", "sh", "-c", script}), {});
    REQUIRE(wait_for_file(ready, std::chrono::seconds(10)));
    REQUIRE(kill(sup.pid, SIGTERM) == 0);
    CAPTURE(row.on_term);
    CHECK(gj::wait_exit(sup.pid) == row.expected);
  }
}

TEST_CASE("the job gets default signal dispositions and the supervisor works with SIGCHLD ignored") {
  // (execve keeps ignored signals; run_job resets them in both modes)
  // A job that sends itself SIGTERM: with the inherited SIG_IGN it would exit 0.
  setenv("GJ_TEST_IGNORE", "1", 1);
  auto supervised = gj::run_and_capture(helper({"supervise", "sh", "-c", "kill -TERM $$; exit 0"}));
  auto execed = gj::run_and_capture(helper({"exec", "sh", "-c", "kill -TERM $$; exit 0"}));
  unsetenv("GJ_TEST_IGNORE");
  CHECK(supervised.status == 128 + SIGTERM);
  CHECK(execed.status == 128 + SIGTERM);
}

TEST_CASE("supervisor reaps orphans reparented to it while the job runs") {
  // The helper checks from inside the job that its orphan disappeared from /proc (reaped) and
  // exits 3 when it stays a zombie.
  CHECK(gj::run_and_capture(helper({"supervise", kHelper, "orphan"})).status == 0);
}

TEST_CASE("resolve_executable follows PATH like the shell") {
  TempDir dir;
  std::filesystem::create_directory(dir / "a");
  std::filesystem::create_directory(dir / "b");
  write_file(dir / "a/tool", "#!/bin/sh\n", 0644);  // not executable: skipped
  write_file(dir / "b/tool", "#!/bin/sh\n", 0755);
  write_file(dir / "a/only-plain", "#!/bin/sh\n", 0644);
  const std::string path = (dir / "a") + ":" + (dir / "b");
  CHECK(gj::resolve_executable("tool", path) == dir / "b/tool");
  CHECK(gj::resolve_executable(dir / "b/tool", "") == dir / "b/tool");
  try {
    gj::resolve_executable("only-plain", path);
    FAIL("expected LaunchError");
  } catch (const gj::LaunchError& e) {
    CHECK(e.exit_code == gj::exit_code::kNotExecutable);
    CHECK_THAT(e.message, Catch::Contains(dir / "a/only-plain"));
  }
  try {
    gj::resolve_executable("absent", path);
    FAIL("expected LaunchError");
  } catch (const gj::LaunchError& e) {
    CHECK(e.exit_code == gj::exit_code::kNotFound);
    CHECK_THAT(e.message, Catch::Contains("PATH=" + path));
  }
}

TEST_CASE("capture_output returns stdout and stderr whatever the status") {
  auto out = gj::capture_output({"sh", "-c", "echo to-out; echo to-err >&2; exit 3"});
  CHECK_THAT(out, Catch::Contains("to-out") && Catch::Contains("to-err"));
  auto r = gj::run_and_capture({"sh", "-c", "exit 3"});
  CHECK(r.status == 3);
  CHECK_THROWS_AS(gj::capture_output({"gj-no-such-program-xyz"}), gj::LaunchError);
}

TEST_CASE("spawn_process: stdin is /dev/null by default and the process group is new on request") {
  gj::SpawnOptions opt;
  opt.capture_output = true;
  opt.new_process_group = true;
  gj::ChildProcess c = gj::spawn_process({"sh", "-c", "cat; ps -o pgid= -p $$"}, opt);
  std::string out;
  char buf[256];
  for (;;) {
    ssize_t n = read(c.output_fd, buf, sizeof buf);
    if (n > 0) out.append(buf, static_cast<std::size_t>(n));
    else if (n == 0) break;
    else std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  close(c.output_fd);
  CHECK(gj::wait_exit(c.pid) == 0);
  CHECK(std::stoi(out) == c.pid);  // `cat` saw EOF at once; pgid == pid
}

TEST_CASE("write_termination_message: one line - only when the file exists") {
  TempDir dir;
  const std::string log = dir / "termination-log";
  gj::write_termination_message_to(log, "not created");
  CHECK(access(log.c_str(), F_OK) != 0);
  write_file(log, "old content that is longer than the new one\n", 0644);
  gj::write_termination_message_to(log, "workers not reachable:\nh1 refused");
  CHECK(slurp(log) == "workers not reachable: h1 refused\n");
}

TEST_CASE("supervised, not PID 1: a child that called setsid is ended when the job ends on SIGTERM") {
  for (int sig : {SIGTERM, SIGINT}) {
    TempDir dir;
    const std::string pid_file = dir / "escaped.pid";
    // The job starts a process in a session of its own (out of the job's process group), which
    // the kernel re-parents to the supervisor (a subreaper) when the job's shell exits.
    const std::string script = "setsid sh -c 'echo $$ > " + pid_file + ".tmp; mv " + pid_file + ".tmp " + pid_file +
                               "; exec sleep 1000' & while :; do sleep 0.05; done";
    gj::ChildProcess sup = gj::spawn_process(helper({"supervise", "sh", "-c", script}), {});
    REQUIRE(wait_for_file(pid_file, std::chrono::seconds(10)));
    const int escaped = std::stoi(slurp(pid_file));
    REQUIRE(kill(sup.pid, sig) == 0);
    CAPTURE(sig);
    CHECK(gj::wait_exit(sup.pid) == 128 + sig);
    const bool ended = ends_within(escaped, std::chrono::seconds(5));
    CHECK(ended);
    if (!ended) kill(escaped, SIGKILL);
  }
}

TEST_CASE("capture_output: a helper that forks and hangs is ended with its children") {
  TempDir dir;
  const std::string pid_file = dir / "grandchild.pid";
  const std::string script = "sleep 1000 & echo $! > " + pid_file + "; sleep 1000";
  bool timed_out = false;
  try {
    gj::capture_output({"sh", "-c", script}, std::chrono::milliseconds(500));
  } catch (const gj::LaunchError& e) {
    timed_out = e.message.find("did not finish within") != std::string::npos;
  } catch (const gj::AgentError& e) {
    FAIL("AgentError " << e.message);
  }
  CHECK(timed_out);
  REQUIRE(wait_for_file(pid_file, std::chrono::seconds(1)));
  const int grandchild = std::stoi(slurp(pid_file));
  CHECK(ends_within(grandchild, std::chrono::seconds(2)));
  // A helper that exits but leaves a child holding its output: the capture times out as for a
  // hanging helper, and the child is ended too.
  const std::string left = dir / "left.pid";
  CHECK_THROWS(gj::capture_output({"sh", "-c", "echo banner; sleep 1000 & echo $! > " + left},
                                  std::chrono::milliseconds(500)));
  REQUIRE(wait_for_file(left, std::chrono::seconds(1)));
  CHECK(ends_within(std::stoi(slurp(left)), std::chrono::seconds(2)));
}

TEST_CASE("read_pod_path refuses anything but a small regular file, without blocking") {
  TempDir dir;
  CHECK_FALSE(gj::read_pod_path(dir.path()).has_value());  // absent
  write_file(dir / "pod_path", "/opt/conda/bin:/usr/bin", 0600);
  CHECK(gj::read_pod_path(dir.path()) == std::optional<std::string>("/opt/conda/bin:/usr/bin"));
  std::filesystem::remove(dir / "pod_path");
  REQUIRE(mkfifo((dir / "pod_path").c_str(), 0600) == 0);  // would block a plain read forever
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_FALSE(gj::read_pod_path(dir.path()).has_value());
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  std::filesystem::remove(dir / "pod_path");
  std::filesystem::create_symlink("/dev/zero", dir / "pod_path");  // would grow without end
  CHECK_FALSE(gj::read_pod_path(dir.path()).has_value());
  std::filesystem::remove(dir / "pod_path");
  write_file(dir / "pod_path", std::string(65 * 1024, 'x'), 0600);
  CHECK_FALSE(gj::read_pod_path(dir.path()).has_value());
}
