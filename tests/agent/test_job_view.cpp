// The master's view inside a running job (job_view.h): hang attribution, the hang timeout,
// status and end-of-job lines, from the lines the wrappers relay.
#include <catch2/catch.hpp>

#include <string>

#include "job_view.h"
#include "monitor_line.h"

using gj::JobView;
using gj::RankIdentity;
using gj::ViewOptions;

namespace {

void feed(JobView& v, int conn, int rank, const std::string& text, std::int64_t now) {
  v.on_line(conn, RankIdentity{rank, rank, "pod-" + std::to_string(rank)}, *gj::parse_monitor_line(text), now);
}

bool has(const std::vector<std::string>& lines, const std::string& part) {
  for (const auto& l : lines)
    if (l.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("job view: ranks waiting past the stall time name the rank that has not entered, with its diagnosis",
          "[job_view]") {
  ViewOptions o;
  o.stall_ms = 2000;
  o.hang_timeout_ms = 6000;
  o.status_ms = 0;
  JobView v(o);
  for (int r = 0; r < 3; ++r) feed(v, 10 + r, r, "set id=w.0 size=3 ranks=0-2", 0);
  // Ranks 0 and 2 entered #5 (waiting 0 ms at t=1000); rank 1 completed #4 and is elsewhere.
  feed(v, 10, 0, "prog set=w.0 in=5 call=gjAllReduce done=4 dcall=gjAllReduce age=0 bytes=80 inms=10", 1000);
  feed(v, 12, 2, "prog set=w.0 in=5 call=gjAllReduce done=4 dcall=gjAllReduce age=0 bytes=80 inms=10", 1000);
  feed(v, 11, 1, "prog set=w.0 in=4 call=gjAllReduce done=4 dcall=gjAllReduce age=0 bytes=64 inms=1", 1000);
  CHECK(v.tick(2500).diagnose.empty());  // 1.5 s: not yet
  auto step = v.tick(3100);
  REQUIRE(step.diagnose == std::vector<int>{11});
  CHECK(step.warn_lines.empty());  // the lines wait for the diagnosis
  feed(v, 11, 1, "diag state=S cpu=0 wchan=hrtimer_nanosleep threads=4", 3200);
  feed(v, 11, 1, "stack reason=  File \"train.py\", line 7 in stuck_in_data_loader", 3200);
  feed(v, 11, 1, "diagend", 3200);
  step = v.tick(3300);
  CHECK(has(step.warn_lines, "hang: rank(s) 0, 2 have waited 2.3 s in gjAllReduce #5 of the world set (3 ranks) for rank(s) 1"));
  CHECK(has(step.warn_lines, "hang: rank 1 (local rank 1, pod pod-1) last completed gjAllReduce #4"));
  CHECK(has(step.warn_lines, "hang: rank 1: process sleeping (S), CPU 0% over the last 5 s, kernel wait hrtimer_nanosleep"));
  CHECK(has(step.warn_lines, "hang: rank 1: | " "  File \"train.py\", line 7 in stuck_in_data_loader"));
  CHECK(v.tick(4000).warn_lines.empty());  // once per round
  step = v.tick(7100);  // the hang timeout
  REQUIRE(step.hung.size() == 1);
  CHECK(step.hung[0].conn == 11);
  CHECK(step.hung[0].what.find("hung: never entered gjAllReduce #5 of the world set (3 ranks)") == 0);
  CHECK(has(step.hung[0].stack, "stuck_in_data_loader"));
}

TEST_CASE("job view: a rank that enters ends the episode; a healthy job has no hang lines", "[job_view]") {
  ViewOptions o;
  o.stall_ms = 2000;
  o.status_ms = 0;
  JobView v(o);
  for (int r = 0; r < 2; ++r) feed(v, r, r, "set id=w.0 size=2 ranks=0-1", 0);
  feed(v, 0, 0, "prog set=w.0 in=5 call=gjAllReduce done=4 dcall=gjAllReduce age=0 bytes=0 inms=0", 1000);
  feed(v, 1, 1, "prog set=w.0 in=4 call=gjAllReduce done=4 dcall=gjAllReduce age=0 bytes=0 inms=0", 1000);
  feed(v, 1, 1, "prog set=w.0 in=5 call=gjAllReduce done=5 dcall=gjAllReduce age=0 bytes=0 inms=0", 2500);
  feed(v, 0, 0, "prog set=w.0 in=5 call=gjAllReduce done=5 dcall=gjAllReduce age=0 bytes=0 inms=0", 2500);
  const auto step = v.tick(5000);
  CHECK(step.diagnose.empty());
  CHECK(step.warn_lines.empty());
}

TEST_CASE("job view: status lines and end-of-job lines per rank", "[job_view]") {
  ViewOptions o;
  o.stall_ms = 0;
  o.status_ms = 10000;
  JobView v(o);
  v.tick(0);
  feed(v, 0, 0, "prog set=w.0 in=100 call=gjAllReduce done=100 dcall=gjAllReduce age=0 bytes=1048576 inms=5000", 1000);
  feed(v, 1, 1, "prog set=w.0 in=100 call=gjAllReduce done=100 dcall=gjAllReduce age=0 bytes=1048576 inms=500", 1000);
  feed(v, 0, 0, "ping state=S cpu=100 rss=2147483648 hwm=3221225472", 1000);
  const auto step = v.tick(10000);
  REQUIRE(step.info_lines.size() == 1);
  CHECK(step.info_lines[0] == "status: 2 rank(s) running, 10.0 collectives/s, 204.8 KiB/s, slowest rank 1 (pod pod-1: 5% of "
                              "its time in collectives, the others 50%), largest RSS rank 0 (pod pod-0) 2.0 GiB");
  const auto end = v.end_lines();
  REQUIRE(end.size() == 2);
  CHECK(end[0] == "rank 0 (pod pod-0): 100 collectives, 1.0 MiB, peak RSS 3.0 GiB");
}

TEST_CASE("job view: Prometheus text, per rank with rank, pod and local_rank labels", "[job_view]") {
  JobView v(ViewOptions{});
  feed(v, 0, 0, "prog set=w.0 in=10 call=gjAllReduce done=10 dcall=gjAllReduce age=0 bytes=4096 inms=3000", 1000);
  feed(v, 1, 1, "prog set=w.0 in=10 call=gjAllReduce done=10 dcall=gjAllReduce age=0 bytes=4096 inms=1000", 1000);
  feed(v, 1, 1, "ping state=S cpu=2500 rss=1048576 hwm=2097152 rx=10 tx=20", 1000);
  const std::string text = v.prometheus_text(false);
  CHECK(text.find("# TYPE gj_collectives_total counter\n") != std::string::npos);
  CHECK(text.find("gj_collectives_total{rank=\"1\",pod=\"pod-1\",local_rank=\"1\"} 10\n") != std::string::npos);
  CHECK(text.find("gj_collective_wait_seconds_total{rank=\"0\",pod=\"pod-0\",local_rank=\"0\"} 2\n") != std::string::npos);
  CHECK(text.find("gj_rank_cpu_seconds_total{rank=\"1\",pod=\"pod-1\",local_rank=\"1\"} 2.5\n") != std::string::npos);
  CHECK(text.find("gj_pod_network_transmit_bytes_total{pod=\"pod-1\"} 20\n") != std::string::npos);
  CHECK(text.find("gj_job_state{state=\"running\"} 1\n") != std::string::npos);
}

TEST_CASE("job view: the GPU series only for ranks whose last ping carried a GPU sample", "[job_view]") {
  JobView v(ViewOptions{});
  feed(v, 0, 0, "ping state=S cpu=1 rss=1 hwm=1 gmem=2000000 gutil=0.370", 1000);
  feed(v, 1, 1, "ping state=S cpu=1 rss=1 hwm=1", 1000);
  std::string text = v.prometheus_text(false);
  CHECK(text.find("# TYPE gj_rank_gpu_memory_bytes gauge\n") != std::string::npos);
  CHECK(text.find("gj_rank_gpu_memory_bytes{rank=\"0\",pod=\"pod-0\",local_rank=\"0\"} 2000000\n") != std::string::npos);
  CHECK(text.find("gj_rank_gpu_utilization_ratio{rank=\"0\",pod=\"pod-0\",local_rank=\"0\"} 0.37\n") != std::string::npos);
  CHECK(text.find("gj_rank_gpu_memory_bytes{rank=\"1\"") == std::string::npos);
  feed(v, 0, 0, "ping state=S cpu=1 rss=1 hwm=1", 2000);  // its program no longer on a GPU
  text = v.prometheus_text(false);
  CHECK(text.find("gj_rank_gpu_memory_bytes") == std::string::npos);  // a CPU job: no GPU families at all
}

namespace {
// Three ranks over 6 windows of 5 s; rank `slow` spends `slow_share` of each window in
// collectives, the others `share`. Returns the warning lines.
std::vector<std::string> run_windows(int slow, double slow_share, double share) {
  ViewOptions o;
  o.stall_ms = 0;
  o.status_ms = 0;
  JobView v(o);
  std::vector<std::string> lines;
  std::int64_t in[3] = {0, 0, 0};
  for (int w = 0; w <= 6; ++w) {
    const std::int64_t now = w * 5000;
    for (int r = 0; r < 3; ++r) {
      feed(v, r, r,
           "prog set=w.0 in=" + std::to_string(w * 50) + " call=gjAllReduce done=" + std::to_string(w * 50) +
               " dcall=gjAllReduce age=0 bytes=0 inms=" + std::to_string(in[r]),
           now);
      in[r] += static_cast<std::int64_t>(5000 * (r == slow ? slow_share : share));
    }
    for (const auto& l : v.tick(now).warn_lines) lines.push_back(l);
  }
  return lines;
}
}  // namespace

TEST_CASE("job view: a rank the others wait for is named a straggler once per episode; a healthy job never",
          "[job_view]") {
  const auto slow = run_windows(1, 0.02, 0.45);
  REQUIRE(slow.size() == 1);
  CHECK(slow[0].rfind("straggler: rank 1 (pod pod-1) arrives last at collectives: the other ranks spend 45% of their "
                      "time in collectives waiting, it 2%", 0) == 0);
  CHECK(slow[0].find("cause: its own work between collectives takes longer") != std::string::npos);
  CHECK(run_windows(1, 0.30, 0.33).empty());  // within 10 % of the window: healthy
  CHECK(run_windows(-1, 0, 0.40).empty());
}
