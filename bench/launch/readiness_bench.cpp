// Readiness gate benchmark: probes many loopback "hosts" (127.1.x.y, one port), some listening
// from the start, some starting to listen late, some never; by address, through a hosts file
// and through a fake DNS server with Kubernetes-style search domains. Prints wall time, CPU time
// of the probing thread, and listen -> ready latency of the late hosts.
//
//   readiness_bench [--hosts N] [--late L] [--closed K] [--late-start-ms T] [--spread-ms S]
//                   [--closed-deadline-ms D] [--smoke]
// Late hosts start listening one by one between T and T+S ms after the gate started.
//
// Exit status 0 when every scenario ended as it must (listening hosts Ready, closed ones
// Refused), 1 otherwise; latency is reported, not asserted (it depends on the machine's load).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fake_dns.h"
#include "loopback.h"
#include "readiness.h"
#include "temp_dir.h"

namespace {

using Clock = std::chrono::steady_clock;
using gj::test::Listener;

struct Args {
  int hosts = 1000;
  int late = 200;
  int closed = 50;
  int late_start_ms = 300;  // after the first sweep over all hosts: late means "probed, then listens"
  int spread_ms = 1500;
  int closed_deadline_ms = 3000;  // at least late-start + spread + 1 s
};

enum class Naming { Address, HostsFile, Dns };

struct Result {
  std::string name;
  int hosts = 0, closed = 0, late = 0;
  bool outcome_ok = false;
  double wall_ms = 0, cpu_ms = 0;
  double p50 = 0, p95 = 0, max = 0;      // listen -> Ready of late hosts
  double last_listen_to_return_ms = -1;  // only when every host becomes ready
  double sweep_ms = 0;                   // until every host listening from the start was Ready
};

std::string address_of(int i) { return "127.1." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1); }
std::string name_of(int i) { return "job-worker-" + std::to_string(i) + ".job"; }

double cpu_ms_of_thread() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

Result run(const std::string& title, const Args& a, Naming naming, bool with_closed) {
  gj::test::TempDir dir;
  const int n = a.hosts;
  const int closed = with_closed ? a.closed : 0;
  const int late = std::min(a.late, n - closed);
  gj::ReadinessOptions opts;
  opts.port = gj::test::free_port();
  opts.progress_interval = std::chrono::hours(1);
  // With closed hosts the run lasts until the deadline: after the last late host has started.
  opts.deadline = std::chrono::milliseconds(
      with_closed ? std::max(a.closed_deadline_ms, a.late_start_ms + a.spread_ms + 1000) : 60000);
  opts.hosts_file = dir / "hosts";
  opts.resolv_conf = dir / "resolv.conf";
  std::string hosts_text = "127.0.0.1 localhost\n";
  std::map<std::string, std::string> records;
  std::vector<std::string> hosts;
  for (int i = 0; i < n; ++i) {
    if (naming == Naming::Address) hosts.push_back(address_of(i));
    else hosts.push_back(name_of(i));
    hosts_text += address_of(i) + " " + name_of(i) + "\n";
    records[name_of(i) + ".ns.svc.cluster.local"] = address_of(i);
  }
  std::unique_ptr<gj::test::FakeDns> dns;
  if (naming == Naming::Dns) {
    dns = std::make_unique<gj::test::FakeDns>(records);
    opts.dns_port = dns->port();
    hosts_text = "127.0.0.1 localhost\n";
  }
  gj::test::replace_file(opts.hosts_file, hosts_text);
  gj::test::replace_file(opts.resolv_conf,
                         "nameserver 127.0.0.1\nsearch ns.svc.cluster.local svc.cluster.local cluster.local\n"
                         "options ndots:5\n");

  // Hosts [0, closed) never listen; the next `late` start at evenly spread times; the rest now.
  std::vector<std::unique_ptr<Listener>> listeners(static_cast<std::size_t>(n));
  std::vector<Clock::time_point> listened(static_cast<std::size_t>(n));
  for (int i = closed + late; i < n; ++i) listeners[static_cast<std::size_t>(i)] = std::make_unique<Listener>(address_of(i), opts.port);
  const Clock::time_point start = Clock::now();
  std::thread opener([&] {
    for (int k = 0; k < late; ++k) {
      const int i = closed + k;
      std::this_thread::sleep_until(start + std::chrono::milliseconds(a.late_start_ms + a.spread_ms * (k + 1) / late));
      listeners[static_cast<std::size_t>(i)] = std::make_unique<Listener>(address_of(i), opts.port);
      listened[static_cast<std::size_t>(i)] = Clock::now();
    }
  });
  const double cpu0 = cpu_ms_of_thread();
  const gj::ReadinessReport report = gj::wait_until_ready(hosts, opts, nullptr);
  const Clock::time_point returned = Clock::now();
  const double cpu1 = cpu_ms_of_thread();
  opener.join();

  Result r;
  r.name = title;
  r.hosts = n;
  r.closed = closed;
  r.late = late;
  r.wall_ms = ms(returned - start);
  r.cpu_ms = cpu1 - cpu0;
  bool ok = report.all_ready == (closed == 0);
  std::vector<double> lat;
  Clock::time_point last_listen{};
  for (int i = 0; i < n; ++i) {
    const auto& h = report.hosts[static_cast<std::size_t>(i)];
    const bool should_be_ready = i >= closed;
    if (should_be_ready != (h.state == gj::HostState::Ready)) {
      if (ok) std::fprintf(stderr, "unexpected: %s is %s (%s)\n", h.host.c_str(), gj::to_string(h.state), h.detail.c_str());
      ok = false;
    }
    if (!should_be_ready && h.state != gj::HostState::Refused) ok = false;
    if (i >= closed + late && h.state == gj::HostState::Ready) r.sweep_ms = std::max(r.sweep_ms, ms(h.ready_at - start));
    if (i >= closed && i < closed + late && h.state == gj::HostState::Ready) {
      lat.push_back(ms(h.ready_at - listened[static_cast<std::size_t>(i)]));
      last_listen = std::max(last_listen, listened[static_cast<std::size_t>(i)]);
    }
  }
  r.outcome_ok = ok;
  r.p50 = percentile(lat, 0.50);
  r.p95 = percentile(lat, 0.95);
  r.max = lat.empty() ? 0 : *std::max_element(lat.begin(), lat.end());
  if (report.all_ready && late > 0) r.last_listen_to_return_ms = ms(returned - last_listen);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    auto next = [&](int* v) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", argv[i]);
        std::exit(2);
      }
      *v = std::atoi(argv[++i]);
    };
    if (!std::strcmp(argv[i], "--hosts")) next(&a.hosts);
    else if (!std::strcmp(argv[i], "--late")) next(&a.late);
    else if (!std::strcmp(argv[i], "--closed")) next(&a.closed);
    else if (!std::strcmp(argv[i], "--spread-ms")) next(&a.spread_ms);
    else if (!std::strcmp(argv[i], "--late-start-ms")) next(&a.late_start_ms);
    else if (!std::strcmp(argv[i], "--closed-deadline-ms")) next(&a.closed_deadline_ms);
    else if (!std::strcmp(argv[i], "--smoke")) a = Args{60, 20, 5, 100, 300, 800};
    else {
      std::fprintf(stderr, "usage: %s [--hosts N] [--late L] [--closed K] [--late-start-ms T] [--spread-ms S] [--closed-deadline-ms D] [--smoke]\n", argv[0]);
      return 2;
    }
  }
  if (a.hosts < 1 || a.hosts > 60000 || a.late < 0 || a.closed < 0 || a.closed + a.late > a.hosts) {
    std::fprintf(stderr, "need 1 <= hosts <= 60000 and late + closed <= hosts\n");
    return 2;
  }
  // Listeners for every host live in this process too.
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);

  std::vector<Result> results;
  results.push_back(run("addresses", a, Naming::Address, false));
  results.push_back(run("hosts file", a, Naming::HostsFile, false));
  results.push_back(run("DNS (ndots:5, 3 search)", a, Naming::Dns, false));
  results.push_back(run("addresses + closed", a, Naming::Address, true));

  std::printf("%-24s %5s %6s %5s %3s %8s %7s %8s %30s %12s\n", "scenario", "hosts", "closed", "late", "ok", "wall_ms",
              "cpu_ms", "sweep_ms", "late listen->ready p50/p95/max", "last->return");
  bool all_ok = true;
  for (const auto& r : results) {
    char lat[64], last[32];
    std::snprintf(lat, sizeof lat, "%.1f / %.1f / %.1f ms", r.p50, r.p95, r.max);
    if (r.last_listen_to_return_ms >= 0) std::snprintf(last, sizeof last, "%.1f ms", r.last_listen_to_return_ms);
    else std::snprintf(last, sizeof last, "-");
    std::printf("%-24s %5d %6d %5d %3s %8.0f %7.0f %8.0f %30s %12s\n", r.name.c_str(), r.hosts, r.closed, r.late,
                r.outcome_ok ? "yes" : "NO", r.wall_ms, r.cpu_ms, r.sweep_ms, lat, last);
    all_ok = all_ok && r.outcome_ok;
  }
  return all_ok ? 0 : 1;
}
