// The rank socket's line format (peer/monitor.h) and the lost peer's message (peer/liveness.h).
#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "peer/liveness.h"
#include "peer/monitor.h"

using gj::peer::Lost;
using gj::peer::lost_message;
using gj::peer::one_line;
using gj::peer::parse_line;

TEST_CASE("rank socket lines: verb, key=value fields, reason= to the end of the line", "[peer]") {
  const auto l = parse_line("lost rank=1 host=job-worker-0 reason=killed by SIGKILL (OOM killer: pod memory limit 2 GiB)");
  CHECK(l.verb == "lost");
  CHECK(l.fields.at("rank") == "1");
  CHECK(l.fields.at("host") == "job-worker-0");
  CHECK(l.fields.at("reason") == "killed by SIGKILL (OOM killer: pod memory limit 2 GiB)");
  CHECK(parse_line("end status=ok").fields.at("status") == "ok");
  const auto failed = parse_line("end status=failed reason=rank 1 exited with code 3");
  CHECK(failed.fields.at("reason") == "rank 1 exited with code 3");
  CHECK(parse_line("leave").verb == "leave");
  CHECK(parse_line("leave").fields.empty());
  CHECK(parse_line("").verb.empty());
  const auto odd = parse_line("lost stray rank=2  host=h");  // a word without '=' is skipped
  CHECK(odd.fields.at("rank") == "2");
  CHECK(odd.fields.at("host") == "h");
  CHECK(odd.fields.count("stray") == 0);
}

TEST_CASE("a reason stays one line", "[peer]") {
  CHECK(one_line("Traceback\n  File \"x\"\tline 3\r") == "Traceback   File \"x\" line 3 ");
}

TEST_CASE("a lost peer's message names rank, host and why, once", "[peer]") {
  CHECK(lost_message(1, Lost{"job-worker-0", "exited with code 3", {}}) ==
        "rank 1 (host job-worker-0) left the job: exited with code 3");
  CHECK(lost_message(2, Lost{"pod-2", "left the job: called shutdown", {}}) ==
        "rank 2 (host pod-2) left the job: called shutdown");
}

TEST_CASE("the master's stop request reaches stop_requested_locally(), whose first call says stoppoll", "[peer]") {
  int pair[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0);
  gj::peer::start({{"GJ_RANK_MONITOR_FD", std::to_string(pair[1])}});
  REQUIRE(gj::peer::attached());
  CHECK_FALSE(gj::peer::stop_requested_locally());
  CHECK_FALSE(gj::peer::stop_requested_locally());
  char buf[64] = {0};
  const ssize_t n = ::recv(pair[0], buf, sizeof buf - 1, 0);
  CHECK(std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0) == "stoppoll\n");  // once
  const std::string stop = "stop reason=the pod is being deleted\n";
  REQUIRE(::send(pair[0], stop.data(), stop.size(), 0) == static_cast<ssize_t>(stop.size()));
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!gj::peer::stop_requested_locally() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(gj::peer::stop_requested_locally());
  CHECK(gj::peer::stop_reason() == "the pod is being deleted");
}
