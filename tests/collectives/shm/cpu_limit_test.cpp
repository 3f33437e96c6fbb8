// CPU quotas from cgroup files: the pure parsers, and cgroup_cpu_limit over fake cgroup v1 and
// v2 trees in a temporary directory (the layouts Kubernetes nodes have).
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "shm/cpu_limit.h"

namespace fs = std::filesystem;

namespace {

struct TempTree {
  fs::path dir;
  TempTree() {
    std::string templ = (fs::temp_directory_path() / "gj-cgroup-XXXXXX").string();
    REQUIRE(mkdtemp(templ.data()) != nullptr);
    dir = templ;
  }
  ~TempTree() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string write(const std::string& rel, const std::string& text) const {
    const fs::path p = dir / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
  std::string root() const { return (dir / "sys").string(); }
};

}  // namespace

TEST_CASE("cpus_from_quota rounds up and treats no quota as no limit", "[shm][cpu_limit]") {
  CHECK(gj::shm::cpus_from_quota(400000, 100000) == 4);
  CHECK(gj::shm::cpus_from_quota(150000, 100000) == 2);
  CHECK(gj::shm::cpus_from_quota(50000, 100000) == 1);
  CHECK(gj::shm::cpus_from_quota(-1, 100000) == 0);
  CHECK(gj::shm::cpus_from_quota(100000, 0) == 0);
}

TEST_CASE("parse_cpu_max reads cgroup v2's cpu.max", "[shm][cpu_limit]") {
  CHECK(gj::shm::parse_cpu_max("max 100000\n") == 0);
  CHECK(gj::shm::parse_cpu_max("200000 100000\n") == 2);
  CHECK(gj::shm::parse_cpu_max("250000 100000") == 3);
  CHECK(gj::shm::parse_cpu_max("") == 0);
  CHECK(gj::shm::parse_cpu_max("12x 100000") == 0);
  CHECK(gj::shm::parse_cpu_max("100000") == 0);
}

TEST_CASE("cgroup v2: the tightest cpu.max of the cgroup and its ancestors", "[shm][cpu_limit]") {
  TempTree t;
  const std::string self = t.write("proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
  t.write("sys/kubepods/cpu.max", "max 100000\n");
  t.write("sys/kubepods/pod1/cpu.max", "400000 100000\n");
  t.write("sys/kubepods/pod1/ctr/cpu.max", "max 100000\n");
  CHECK(gj::shm::cgroup_cpu_limit(t.root(), self) == 4);
  t.write("sys/kubepods/pod1/ctr/cpu.max", "150000 100000\n");
  CHECK(gj::shm::cgroup_cpu_limit(t.root(), self) == 2);
}

TEST_CASE("cgroup v2 inside a cgroup namespace: the limit at the mount's root", "[shm][cpu_limit]") {
  TempTree t;
  const std::string self = t.write("proc/self/cgroup", "0::/\n");
  t.write("sys/cpu.max", "300000 100000\n");
  CHECK(gj::shm::cgroup_cpu_limit(t.root(), self) == 3);
}

TEST_CASE("cgroup v1: cpu.cfs_quota_us / cpu.cfs_period_us under the cpu controller's mount", "[shm][cpu_limit]") {
  TempTree t;
  const std::string self = t.write("proc/self/cgroup", "4:memory:/x\n3:cpu,cpuacct:/kubepods/pod2\n2:cpuset:/\n");
  t.write("sys/cpu,cpuacct/kubepods/pod2/cpu.cfs_quota_us", "600000\n");
  t.write("sys/cpu,cpuacct/kubepods/pod2/cpu.cfs_period_us", "100000\n");
  t.write("sys/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  t.write("sys/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  CHECK(gj::shm::cgroup_cpu_limit(t.root(), self) == 6);
}

TEST_CASE("no quota anywhere, or nothing readable, is no limit", "[shm][cpu_limit]") {
  TempTree t;
  const std::string v1 = t.write("proc/v1", "1:cpu:/\n");
  t.write("sys/cpu/cpu.cfs_quota_us", "-1\n");
  t.write("sys/cpu/cpu.cfs_period_us", "100000\n");
  CHECK(gj::shm::cgroup_cpu_limit(t.root(), v1) == 0);
  CHECK(gj::shm::cgroup_cpu_limit(t.root(), (t.dir / "missing").string()) == 0);
  const std::string garbage = t.write("proc/garbage", "not a cgroup line\n::\n");
  CHECK(gj::shm::cgroup_cpu_limit(t.root(), garbage) == 0);
}
