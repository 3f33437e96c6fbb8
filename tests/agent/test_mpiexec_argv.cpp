#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>

#include "mpiexec_argv.h"
#include "test_support.h"

using namespace gj;
using Argv = std::vector<std::string>;

namespace {

// The platform cases as plans (their hosts/np are checked in test_plan.cpp).
LaunchPlan plan_of(std::vector<HostSlots> hosts, std::int64_t np) {
  LaunchPlan p;
  p.hosts = std::move(hosts);
  p.np = np;
  p.command = {"python3", "/app/train.py", "--lr", "0.1"};
  return p;
}

const LaunchPlan kBothCpu = plan_of({{"m.job", 4}, {"w-0.job", 8}, {"w-1.job", 8}}, 20);
const LaunchPlan kBothGpu = plan_of({{"m.job", 8}, {"w-0.job", 8}, {"w-1.job", 8}}, 24);
const LaunchPlan kWorkersOnly = plan_of({{"w-0.job", 8}, {"w-1.job", 8}}, 16);
const LaunchPlan kMasterOnly = plan_of({{"m.job", 8}}, 8);

MpiexecRequest request(MpiFlavour f) {
  MpiexecRequest r;
  r.flavour = f;
  r.ssh.port = 2222;
  r.ssh.connect_timeout_s = 7;
  r.ssh.identity_files = {"/run/gj/ssh/id_rsa"};
  r.hostfile_path = "/run/gj/hostfile";
  return r;
}

const std::string kSsh =
    "-o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR "
    "-o ConnectTimeout=7 -p 2222 -i /run/gj/ssh/id_rsa";

Argv openmpi4(const std::string& host_arg, const std::string& np) {
  return {"mpiexec", "--allow-run-as-root", "--host", host_arg, "-np", np, "--map-by", "slot",
          "--mca", "plm_rsh_args", kSsh, "--mca", "plm_rsh_no_tree_spawn", "1",
          "--mca", "orte_keep_fqdn_hostnames", "1", "--bind-to", "none", "python3", "/app/train.py", "--lr", "0.1"};
}

}  // namespace

TEST_CASE("ssh never prompts", "[argv]") {
  CHECK(ssh_client_args({22, 10, {}}) == Argv{"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o",
                                              "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-o",
                                              "ConnectTimeout=10", "-p", "22"});
}

TEST_CASE("golden argv: Open MPI 4, every platform case", "[argv]") {
  const auto r = request(MpiFlavour::OpenMpi4);
  CHECK(build_mpiexec_command(kBothCpu, r).argv == openmpi4("m.job:4,w-0.job:8,w-1.job:8", "20"));
  CHECK(build_mpiexec_command(kBothGpu, r).argv == openmpi4("m.job:8,w-0.job:8,w-1.job:8", "24"));
  CHECK(build_mpiexec_command(kWorkersOnly, r).argv == openmpi4("w-0.job:8,w-1.job:8", "16"));
  CHECK(build_mpiexec_command(kMasterOnly, r).argv == openmpi4("m.job:8", "8"));
  CHECK(build_mpiexec_command(kBothCpu, r).env.empty());
  CHECK_FALSE(build_mpiexec_command(kBothCpu, r).hostfile.has_value());
}

TEST_CASE("golden argv: Open MPI 5 uses PRRTE's parameter names", "[argv]") {
  const Argv want = {"mpiexec", "--allow-run-as-root", "--host", "m.job:8,w-0.job:8,w-1.job:8", "-np", "24",
                     "--map-by", "slot", "--prtemca", "plm_ssh_args", kSsh, "--prtemca", "plm_ssh_no_tree_spawn",
                     "1", "--prtemca", "prte_keep_fqdn_hostnames", "1", "--bind-to", "none", "python3", "/app/train.py", "--lr", "0.1"};
  CHECK(build_mpiexec_command(kBothGpu, request(MpiFlavour::OpenMpi5)).argv == want);
}

TEST_CASE("golden argv: MPICH hydra, every platform case", "[argv]") {
  const auto r = request(MpiFlavour::Mpich);
  const auto hydra = [](const std::string& hosts, const std::string& n, const std::string& ppn) {
    Argv a = {"mpiexec", "-hosts", hosts, "-n", n};
    if (!ppn.empty()) a.insert(a.end(), {"-ppn", ppn});
    // -genvnone: each rank keeps its own pod's environment.
    a.insert(a.end(), {"-launcher", "ssh", "-bind-to", "none", "-genvnone", "python3", "/app/train.py", "--lr", "0.1"});
    return a;
  };
  CHECK(build_mpiexec_command(kBothCpu, r).argv == hydra("m.job:4,w-0.job:8,w-1.job:8", "20", ""));
  CHECK(build_mpiexec_command(kBothGpu, r).argv == hydra("m.job:8,w-0.job:8,w-1.job:8", "24", "8"));
  CHECK(build_mpiexec_command(kWorkersOnly, r).argv == hydra("w-0.job:8,w-1.job:8", "16", "8"));
  CHECK(build_mpiexec_command(kMasterOnly, r).argv == hydra("m.job:8", "8", "8"));
  const auto env = build_mpiexec_command(kBothCpu, r).env;
  CHECK(env == std::vector<std::pair<std::string, std::string>>{{"HYDRA_LAUNCHER_EXTRA_ARGS", kSsh}});
}

TEST_CASE("golden argv: Intel MPI, every platform case", "[argv]") {
  const auto r = request(MpiFlavour::Intel);
  const Argv tail = {"-bootstrap", "ssh", "-bootstrap-exec-args", kSsh, "-genvnone", "-genv", "I_MPI_PIN", "off",
                     "python3", "/app/train.py", "--lr", "0.1"};
  const auto with_tail = [&](Argv a) {
    a.insert(a.end(), tail.begin(), tail.end());
    return a;
  };
  // Non-uniform slots need a machinefile: Intel's -hosts takes bare names.
  const auto cpu = build_mpiexec_command(kBothCpu, r);
  CHECK(cpu.argv == with_tail({"mpiexec", "-machinefile", "/run/gj/hostfile", "-n", "20"}));
  REQUIRE(cpu.hostfile.has_value());
  CHECK(cpu.hostfile->content == "m.job:4\nw-0.job:8\nw-1.job:8\n");
  CHECK(build_mpiexec_command(kBothGpu, r).argv ==
        with_tail({"mpiexec", "-hosts", "m.job,w-0.job,w-1.job", "-ppn", "8", "-n", "24"}));
  CHECK(build_mpiexec_command(kWorkersOnly, r).argv ==
        with_tail({"mpiexec", "-hosts", "w-0.job,w-1.job", "-ppn", "8", "-n", "16"}));
  CHECK(build_mpiexec_command(kMasterOnly, r).argv == with_tail({"mpiexec", "-hosts", "m.job", "-ppn", "8", "-n", "8"}));
}

TEST_CASE("exports and user mpiexec args go before the script", "[argv]") {
  LaunchPlan p = kMasterOnly;
  p.exports = {{"OMP_NUM_THREADS", std::nullopt}, {"MODE", std::string("fast")}, {"NCCL_DEBUG", std::nullopt}};
  p.mpi_args = {"--bind-to", "none"};
  p.binding.mode = BindingMode::User;  // what choose_binding makes of these words (test_cpu_binding.cpp)
  MpiexecRequest r = request(MpiFlavour::OpenMpi4);
  r.ssh.identity_files.clear();
  const Argv ompi = build_mpiexec_command(p, r).argv;
  const Argv ompi_tail(ompi.end() - 12, ompi.end());
  CHECK(ompi_tail == Argv{"-x", "OMP_NUM_THREADS", "-x", "MODE=fast", "-x", "NCCL_DEBUG", "--bind-to", "none",
                          "python3", "/app/train.py", "--lr", "0.1"});
  const Argv mpich = build_mpiexec_command(p, request(MpiFlavour::Mpich)).argv;
  const Argv mpich_tail(mpich.end() - 11, mpich.end());
  CHECK(mpich_tail == Argv{"-genvlist", "OMP_NUM_THREADS,NCCL_DEBUG", "-genv", "MODE", "fast", "--bind-to", "none",
                           "python3", "/app/train.py", "--lr", "0.1"});
}

TEST_CASE("hostfile: forced, never, and automatic near 128 KiB", "[argv]") {
  MpiexecRequest r = request(MpiFlavour::OpenMpi4);
  r.hostfile_mode = HostfileMode::Always;
  const auto forced = build_mpiexec_command(kBothCpu, r);
  REQUIRE(forced.hostfile.has_value());
  CHECK(forced.hostfile->path == "/run/gj/hostfile");
  CHECK(forced.hostfile->content == "m.job slots=4\nw-0.job slots=8\nw-1.job slots=8\n");
  CHECK(Argv(forced.argv.begin(), forced.argv.begin() + 6) ==
        Argv{"mpiexec", "--allow-run-as-root", "--hostfile", "/run/gj/hostfile", "-np", "20"});

  r.flavour = MpiFlavour::Mpich;
  const auto hydra = build_mpiexec_command(kBothCpu, r);
  REQUIRE(hydra.hostfile.has_value());
  CHECK(hydra.hostfile->content == "m.job:4\nw-0.job:8\nw-1.job:8\n");
  CHECK(Argv(hydra.argv.begin(), hydra.argv.begin() + 3) == Argv{"mpiexec", "-f", "/run/gj/hostfile"});

  // Automatic: just under and just over the limit.
  const auto hosts_of_bytes = [](std::size_t n_hosts) {
    std::vector<HostSlots> hs;
    for (std::size_t i = 0; i < n_hosts; ++i) hs.push_back({"h" + std::to_string(100000 + i) + ".job", 8});
    return hs;  // "h100000.job:8," = 14 bytes each
  };
  const std::size_t per_host = 14;
  LaunchPlan under = plan_of(hosts_of_bytes(kHostArgLimit / per_host), 8);
  LaunchPlan over = plan_of(hosts_of_bytes(kHostArgLimit / per_host + 1), 8);
  CHECK_FALSE(use_hostfile(under, HostfileMode::Auto));
  CHECK(use_hostfile(over, HostfileMode::Auto));
  CHECK_FALSE(use_hostfile(over, HostfileMode::Never));
  CHECK(hosts_argument(under.hosts).size() < kHostArgLimit);
}

TEST_CASE("flavour detection from mpiexec --version", "[argv]") {
  const std::pair<const char*, std::optional<MpiFlavour>> cases[] = {
      {"mpiexec (OpenRTE) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/\n", MpiFlavour::OpenMpi4},
      {"mpirun (Open MPI) 4.0.3\n", MpiFlavour::OpenMpi4},
      {"mpirun (Open MPI) 5.0.3\n\nReport bugs to https://www.open-mpi.org/community/help/\n", MpiFlavour::OpenMpi5},
      {"mpiexec (Open MPI) 10.1.0\n", MpiFlavour::OpenMpi5},
      {"HYDRA build details:\n    Version:                                 4.0.2\n", MpiFlavour::Mpich},
      {"Intel(R) MPI Library for Linux* OS, Version 2021.10 Build 20230619\nHYDRA build details:", MpiFlavour::Intel},
      {"mpiexec: command not found", std::nullopt},
      // Open MPI 5's failure without HOME: its error text is no banner (it was read as Open MPI 4).
      {"[vm:18815] Error: Unable to get the user home directory\nIt looks like opal_init failed for some reason; "
       "your parallel process is\n(which may only be relevant to an\nOpen MPI developer):\n", std::nullopt},
      {"", std::nullopt},
  };
  for (const auto& [text, want] : cases) {
    INFO(text);
    CHECK(detect_flavour(text) == want);
  }
  CHECK(flavour_from_name("openmpi") == MpiFlavour::OpenMpi4);
  CHECK(flavour_from_name("openmpi5") == MpiFlavour::OpenMpi5);
  CHECK(flavour_from_name("intel") == MpiFlavour::Intel);
  CHECK_FALSE(flavour_from_name("OpenMPI").has_value());
}

// The real banner of Intel MPI's runtime from PyPI (impi-rt 2021.18.1, the version CI runs): it
// names neither hydra nor MPICH, only the library.
TEST_CASE("flavour detection from Intel MPI's own mpiexec --version", "[argv]") {
  std::ifstream in(GJ_SOURCE_DIR "/tests/agent/data/impi-rt-2021.18.1.version");
  REQUIRE(in);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(text.rfind("Intel(R) MPI Library for Linux* OS, Version 2021.18.1", 0) == 0);
  CHECK(detect_flavour(text) == MpiFlavour::Intel);
  CHECK(known_mpi_defect(text).empty());
}

TEST_CASE("known MPI defects named from mpiexec --version", "[argv]") {
  const auto hydra = [](const std::string& version, const std::string& device) {
    return "HYDRA build details:\n    Version:                                 " + version +
           "\n    Configure options:                       '--with-device=" + device + "' '--prefix=/usr'\n";
  };
  const std::pair<std::string, bool> cases[] = {
      {hydra("4.0.2", "ch4:ucx"), true},   // Debian 12
      {hydra("4.1.2", "ch4:ucx"), true},
      {hydra("3.4.1", "ch4:ucx"), true},
      {hydra("4.2.0", "ch4:ucx"), false},  // barrier before the flushes
      {hydra("4.3.1", "ch4:ucx"), false},
      {hydra("4.0.2", "ch4:ofi"), false},  // not UCX
      {hydra("5.0.0", "ch4:ucx"), false},
      {"HYDRA build details:\n    Configure options: '--with-device=ch4:ucx'\n", false},  // no version: say nothing
      {"Intel(R) MPI Library for Linux* OS, Version 2021.10\n" + hydra("4.0.2", "ch4:ucx"), false},
      {"mpirun (Open MPI) 4.1.4\n", false},
  };
  for (const auto& [text, defect] : cases) {
    INFO(text);
    const std::string message = known_mpi_defect(text);
    CHECK(message.empty() == !defect);
    if (defect) CHECK(message.find("deadlock in MPI_Finalize") != std::string::npos);
  }
  CHECK(known_mpi_defect(hydra("4.0.2", "ch4:ucx")).rfind("MPICH 4.0.2 with ch4:ucx", 0) == 0);
}
