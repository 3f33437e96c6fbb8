// The pre-flight checks' side effects (sys/run_many.h, sys/net_probe.h, sys/gpu_probe.h,
// sys/nccl_log.h): commands run at once under one deadline, three pods' network probes on
// loopback addresses measuring each other, the driver's proc tree under a root, a rank's NCCL
// debug file read back.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "gpu_probe.h"
#include "host_facts.h"
#include "nccl_log.h"
#include "net_probe.h"
#include "run_many.h"
#include "temp_dir.h"

using namespace gj;
using gj::test::TempDir;

TEST_CASE("run_many runs every command at once and ends the late ones at the deadline") {
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_many({{"/bin/sh", "-c", "echo one; exit 3"}, {"/bin/sh", "-c", "sleep 30"},
                           {"/bin/sh", "-c", "sleep 0.3; echo two"}, {"/no/such/program"}},
                          std::chrono::milliseconds(1500));
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(r.size() == 4);
  CHECK(r[0].status == 3);
  CHECK(r[0].output == "one\n");
  CHECK(r[1].timed_out);
  CHECK(r[2].status == 0);
  CHECK(r[2].output == "two\n");
  CHECK_FALSE(r[3].error.empty());
  CHECK(ms < 5000);
}

TEST_CASE("three pods' network probes measure each other's links within the budget") {
  const std::vector<std::string> addrs = {"127.0.0.1", "127.0.0.2", "127.0.0.3"};
  const int port = free_tcp_port();
  std::vector<std::vector<LinkResult>> results(3);
  std::vector<std::thread> pods;
  for (std::size_t i = 0; i < 3; ++i)
    pods.emplace_back([&, i] {
      NetProbeOptions o;
      o.self = i;
      o.addresses = addrs;
      o.port = port;
      o.bytes = 1 << 20;
      o.budget = std::chrono::seconds(5);
      o.targets = net_targets(3, i);
      o.incoming = net_incoming(3, i);
      results[i] = run_net_probe(o);
    });
  for (auto& t : pods) t.join();
  for (std::size_t i = 0; i < 3; ++i) {
    REQUIRE(results[i].size() == 2);
    for (const auto& l : results[i]) {
      INFO("link " << l.from << " -> " << l.to << ": " << l.error);
      CHECK(l.error.empty());
      CHECK(l.from == i);
      CHECK(l.bytes_per_s > 1e6);
      CHECK(l.rtt_us > 0);
    }
  }
}

TEST_CASE("a probe whose peer never answers reports the link within its budget") {
  NetProbeOptions o;
  o.self = 0;
  o.addresses = {"127.0.0.1", "127.0.0.9"};
  o.port = free_tcp_port();
  o.budget = std::chrono::milliseconds(800);
  o.targets = {1};
  o.incoming = 1;
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_net_probe(o);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3));
  REQUIRE(r.size() == 1);
  CHECK(r[0].error.find("127.0.0.9") != std::string::npos);
}

TEST_CASE("the driver's proc tree and RDMA devices are read under a root; a rank's NCCL file read back") {
  TempDir root;
  std::vector<std::string> notes;
  CHECK_FALSE(proc_devices(root.path(), notes));  // no driver
  const std::string dir = root.path() + "/proc/driver/nvidia/gpus/0000:3b:00.0";
  REQUIRE(system(("mkdir -p '" + dir + "' '" + root.path() + "/sys/class/infiniband/mlx5_1'").c_str()) == 0);
  std::ofstream(dir + "/information") << "Model: \t\t Tesla T4\nGPU UUID: \t GPU-aa\nBus Location: \t 0000:3b:00.0\n";
  const auto devices = proc_devices(root.path(), notes);
  REQUIRE(devices);
  REQUIRE(devices->size() == 1);
  CHECK((*devices)[0].name == "Tesla T4");
  CHECK(rdma_devices(root.path()) == std::vector<std::string>{"mlx5_1"});
  CHECK_FALSE(nvml_devices(root.path() + "/libnvidia-ml.so.1", notes));
  CHECK(notes.back().find("NVML not loaded") != std::string::npos);

  const std::string file = root.path() + "/nccl-rank0.log";
  CHECK_FALSE(nccl_summary_of_file(file));
  std::ofstream(file) << "h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0>\nh:1:1 [0] NCCL INFO Using network Socket\n";
  CHECK(nccl_summary_of_file(file) == std::string("gj-nccl net=Socket dev=eth0:10.0.0.2<0> via=- version=-"));
}
