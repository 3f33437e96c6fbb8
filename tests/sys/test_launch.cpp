// run_job (exec and supervise), spawn/capture, resolve_executable, termination message.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "exit_codes.h"
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
