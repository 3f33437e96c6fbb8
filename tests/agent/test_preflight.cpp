// The pre-flight checks' pure parts (docs/agent.md, "Pre-flight checks"): the pod facts' line
// protocol, CUDA_VISIBLE_DEVICES as CUDA reads it, the GPU comparison against each pod's limit,
// the network check's links and analysis, the probe's arguments, the NCCL debug variables of the
// rank environment, and NCCL's transport from its INIT/NET lines.
#include <catch2/catch.hpp>

#include <string>

#include "gpu_check.h"
#include "nccl_transport.h"
#include "net_check.h"
#include "pod_facts.h"
#include "preflight.h"
#include "rank_env.h"
#include "settings.h"
#include "test_support.h"

using namespace gj;

namespace {

GpuDevice gpu(int i) {
  return {"GPU-0000000" + std::to_string(i), "0000:1" + std::to_string(i) + ":00.0", "NVIDIA H100 80GB HBM3", 0};
}

std::vector<GpuDevice> gpus(int n) {
  std::vector<GpuDevice> out;
  for (int i = 0; i < n; ++i) out.push_back(gpu(i));
  return out;
}

PodFacts facts_with(int n, GpuSource source = GpuSource::Nvml) {
  PodFacts f;
  f.source = source;
  f.devices = gpus(n);
  return f;
}

PodGpuAnswer answer(const std::string& pod, std::int64_t limit, std::optional<PodFacts> f) {
  PodGpuAnswer a;
  a.pod = pod;
  a.limit = limit;
  a.limit_name = "GJ_TRAINING_WORKER_GPU_LIMIT";
  a.facts = std::move(f);
  return a;
}

LinkResult link(std::size_t from, std::size_t to, double rate, double rtt = 50) {
  LinkResult l;
  l.from = from;
  l.to = to;
  l.bytes_per_s = rate;
  l.rtt_us = rtt;
  return l;
}

// Every link net_targets gives 4 pods, at `rate`, except those touching `slow_pod` at `slow`.
std::vector<LinkResult> four_pods(double rate, std::optional<std::size_t> slow_pod = {}, double slow = 0) {
  std::vector<LinkResult> out;
  for (std::size_t i = 0; i < 4; ++i)
    for (const auto t : net_targets(4, i))
      out.push_back(link(i, t, slow_pod && (i == *slow_pod || t == *slow_pod) ? slow : rate));
  return out;
}

const std::vector<std::string> kPods = {"m.job", "w0.job", "w1.job", "w2.job"};

}  // namespace

TEST_CASE("pod facts survive the line protocol, among a shell's noise") {
  PodFacts f = facts_with(2);
  f.devices[1].ecc_uncorrected = 3;
  f.devices[0].name = "name with  spaces";
  f.cuda_visible_devices = "1,0";
  f.notes = {"NVML device 2 cannot be opened (error 15: GPU is lost)"};
  f.address = "10.0.0.2";
  f.ssh_client = "10.0.0.1";
  f.rdma_devices = {"mlx5_0", "mlx5_1"};
  f.nccl_ib_hca = "mlx5_0";
  std::string error;
  const auto back = parse_pod_facts("Welcome to the image\n" + render_pod_facts(f) + "bye\n", error);
  REQUIRE(back);
  CHECK(back->source == GpuSource::Nvml);
  CHECK(back->devices == f.devices);
  CHECK(back->cuda_visible_devices == f.cuda_visible_devices);
  CHECK(back->notes == f.notes);
  CHECK(back->address == "10.0.0.2");
  CHECK(back->ssh_client == "10.0.0.1");
  CHECK(back->rdma_devices == f.rdma_devices);
  CHECK(back->nccl_ib_hca == f.nccl_ib_hca);

  const std::string text = render_pod_facts(f);
  CHECK_FALSE(parse_pod_facts(text.substr(0, text.find("gj-facts-end")), error));  // cut short
  CHECK(error.find("cut short") != std::string::npos);
  CHECK_FALSE(parse_pod_facts("bash: gj-mpirun: command not found\n", error));
  CHECK(error.find("no facts") != std::string::npos);
  CHECK_FALSE(parse_pod_facts("gj-facts 1\ngj-facts-gpu a b notanumber x\ngj-facts-end\n", error));
}

TEST_CASE("the driver's proc information file gives a device") {
  const GpuDevice d = parse_proc_gpu_information(
      "Model: \t\t NVIDIA A100-SXM4-80GB\nIRQ:   \t\t 0\nGPU UUID: \t GPU-4f3c\nBus Location: \t 0000:07:00.0\n", "0000:07:00.0");
  CHECK(d.name == "NVIDIA A100-SXM4-80GB");
  CHECK(d.uuid == "GPU-4f3c");
  CHECK(d.pci == "0000:07:00.0");
  CHECK(d.ecc_uncorrected == -1);
  CHECK(parse_proc_gpu_information("Model: X\n", "0000:09:00.0").pci == "0000:09:00.0");
  CHECK(ssh_connection_addresses(std::string("10.0.0.1 4242 10.0.0.2 22")) == std::make_pair(std::string("10.0.0.2"), std::string("10.0.0.1")));
  CHECK(ssh_connection_addresses(std::nullopt).first.empty());
  CHECK(ssh_connection_addresses(std::string("garbage")).first.empty());
}

TEST_CASE("CUDA_VISIBLE_DEVICES selects devices as CUDA does") {
  const auto all = gpus(4);
  struct Row {
    std::optional<std::string> cvd;
    std::size_t count;
    bool note;
  };
  const std::vector<Row> rows = {
      {std::nullopt, 4, false}, {std::string("0,1,2,3"), 4, false}, {std::string("2"), 1, false},
      {std::string(""), 0, true},         // empty: no device
      {std::string("0,7,1"), 1, true},    // ends at the first index that names none
      {std::string("1,1"), 1, true},      // a device twice ends it
      {std::string("GPU-00000003,0"), 2, false},  // a UUID prefix
      {std::string("00000002"), 1, false},        // a UUID without GPU-
      {std::string("GPU-0"), 0, true},            // a prefix of several: names none
      {std::string("-1"), 0, true},
  };
  for (const auto& r : rows) {
    INFO("CUDA_VISIBLE_DEVICES=" << r.cvd.value_or("(unset)"));
    const VisibleGpus v = visible_gpus(all, r.cvd);
    CHECK(v.devices.size() == r.count);
    CHECK(v.note.empty() != r.note);
  }
  CHECK(visible_gpus(all, std::string("3,0")).devices.front().uuid == "GPU-00000003");
}

TEST_CASE("a pod that sees fewer GPUs than its limit fails the check, naming it") {
  const GpuCheck short_one = check_gpus({answer("m.job", 8, facts_with(8)), answer("w0.job", 8, facts_with(7)),
                                         answer("w1.job", 8, facts_with(8))});
  REQUIRE(short_one.failures.size() == 1);
  const std::string& f = short_one.failures[0];
  CHECK(f.find("pod w0.job sees 7 GPU(s) but GJ_TRAINING_WORKER_GPU_LIMIT=8") != std::string::npos);
  CHECK(f.find("6 GPU-00000006 0000:16:00.0") != std::string::npos);  // the devices it does see
  CHECK(short_one.summary.empty());

  const GpuCheck ok = check_gpus({answer("m.job", 8, facts_with(8)), answer("w0.job", 4, facts_with(8))});
  CHECK(ok.failures.empty());
  CHECK(ok.summary.find("2 pod(s) see their GPUs") != std::string::npos);

  PodFacts masked = facts_with(8);
  masked.cuda_visible_devices = "0,1,2";
  const GpuCheck cvd = check_gpus({answer("w0.job", 4, masked)});
  REQUIRE(cvd.failures.size() == 1);
  CHECK(cvd.failures[0].find("sees 3 GPU(s)") != std::string::npos);
  CHECK(cvd.failures[0].find("CUDA_VISIBLE_DEVICES=\"0,1,2\"") != std::string::npos);

  PodFacts ecc = facts_with(2);
  ecc.devices[1].ecc_uncorrected = 5;
  const GpuCheck bad_memory = check_gpus({answer("w0.job", 2, ecc)});
  REQUIRE(bad_memory.failures.size() == 1);
  CHECK(bad_memory.failures[0].find("GPU 1 (GPU-00000001, 0000:11:00.0) reports 5 uncorrected ECC") != std::string::npos);

  const GpuCheck no_driver = check_gpus({answer("w0.job", 8, PodFacts{})});
  CHECK(no_driver.failures.empty());
  CHECK(no_driver.debug.size() == 1);
  CHECK(no_driver.summary.empty());

  PodGpuAnswer unasked = answer("w0.job", 8, std::nullopt);
  unasked.error = "exit status 255";
  const GpuCheck unreachable = check_gpus({unasked, answer("w1.job", 0, std::nullopt)});
  CHECK(unreachable.failures.empty());
  CHECK(unreachable.warnings.size() == 1);  // the CPU pod (limit 0) is not asked about
}

TEST_CASE("the GPU limit of each host follows the layout") {
  LaunchPlan plan;
  plan.hosts = {{"m.job", 2}, {"w0.job", 4}};
  plan.layout = Layout::BothGpu;
  auto q = gpu_questions(plan);
  CHECK(q[0].limit == 2);
  CHECK(q[0].limit_name == "GJ_TRAINING_MASTER_GPU_LIMIT");
  CHECK(q[1].limit_name == "GJ_TRAINING_WORKER_GPU_LIMIT");
  plan.layout = Layout::WorkersOnly;
  CHECK(gpu_questions(plan)[0].limit_name == "GJ_TRAINING_WORKER_GPU_LIMIT");
  plan.layout = Layout::BothCpu;
  CHECK(gpu_questions(plan)[1].limit == 0);
  plan.layout = Layout::Hostfile;
  CHECK(gpu_questions(plan)[0].limit == 0);
}

TEST_CASE("each pod measures at most 3 links and serves as many") {
  CHECK(net_targets(1, 0).empty());
  CHECK(net_targets(2, 0) == std::vector<std::size_t>{1});
  CHECK(net_targets(3, 0) == std::vector<std::size_t>{1, 2});
  CHECK(net_targets(4, 1) == std::vector<std::size_t>{2, 0, 3});
  CHECK(net_targets(64, 63) == std::vector<std::size_t>{0, 62, 31});
  for (std::size_t n : {2u, 3u, 4u, 5u, 64u})
    for (std::size_t i = 0; i < n; ++i) {
      CHECK(net_targets(n, i).size() <= 3);
      CHECK(net_incoming(n, i) <= 3);
    }
}

TEST_CASE("link lines survive the probe's output") {
  LinkResult l = link(3, 7, 1.25e9, 42.5);
  const auto back = parse_link(render_link(l));
  REQUIRE(back);
  CHECK(back->from == 3);
  CHECK(back->to == 7);
  CHECK(back->bytes_per_s == Approx(1.25e9));
  CHECK(back->rtt_us == Approx(42.5));
  l.error = "connect: Connection refused (10.0.0.3:29411)";
  CHECK(parse_link(render_link(l))->error == l.error);
  CHECK_FALSE(parse_link("gj-net x 1 2 3"));
  CHECK_FALSE(parse_link("RANK 0/4"));
}

TEST_CASE("a pod far below the median is named with both numbers, and nothing else") {
  const NetFinding even = analyse_links(kPods, four_pods(1e9));
  CHECK(even.slow.empty());
  CHECK(even.summary.find("12 link(s) between 4 pod(s), median 1.00 GB/s") != std::string::npos);

  const NetFinding noisy = analyse_links(kPods, [] {
    auto l = four_pods(1e9);
    l[4].bytes_per_s = 2.5e8;  // one link at a quarter: a busy moment, not 1/10
    return l;
  }());
  CHECK(noisy.slow.empty());

  const NetFinding slow = analyse_links(kPods, four_pods(1e9, 2, 5e6));
  REQUIRE(slow.slow.size() == 1);
  CHECK(slow.slow[0].find("pod w1.job is far below the job's median on all its links: 5.0 MB/s (median 1.00 GB/s)") !=
        std::string::npos);
  CHECK(slow.slow[0].find("round trip 0.050 ms") != std::string::npos);
  CHECK(slow.suspects.size() == 6);

  auto one_link = four_pods(1e9);
  one_link[0].bytes_per_s = 2e7;  // m -> w0 only
  const NetFinding bad_link = analyse_links(kPods, one_link);
  REQUIRE(bad_link.slow.size() == 1);
  CHECK(bad_link.slow[0].find("link m.job -> w0.job is far below") != std::string::npos);

  auto laggy = four_pods(1e9);
  for (auto& l : laggy)
    if (l.from == 3 || l.to == 3) l.rtt_us = 20000;
  const NetFinding lag = analyse_links(kPods, laggy);
  REQUIRE(lag.slow.size() == 1);
  CHECK(lag.slow[0].find("pod w2.job") != std::string::npos);
  CHECK(lag.slow[0].find("round trip 20.0 ms (median 0.050 ms)") != std::string::npos);

  auto broken = four_pods(1e9);
  broken[1].error = "connect: Connection refused";
  broken[1].bytes_per_s = -1;
  CHECK(analyse_links(kPods, broken).errors.size() == 1);

  const std::vector<std::string> two = {"a", "b"};
  CHECK(analyse_links(two, {link(0, 1, 1e9), link(1, 0, 1e6)}).slow.empty());  // nothing to compare with
}

TEST_CASE("a link measured again keeps its best figures") {
  const auto merged = merge_remeasured({link(0, 1, 1e6, 900), link(1, 0, 1e9)}, {link(0, 1, 9e8, 40)});
  CHECK(merged[0].bytes_per_s == Approx(9e8));
  CHECK(merged[0].rtt_us == Approx(40));
  CHECK(merged[1].bytes_per_s == Approx(1e9));
}

TEST_CASE("the network probe's arguments survive the command line") {
  NetProbeArgs a;
  a.self = 2;
  a.port = 29411;
  a.bytes = 4 << 20;
  a.budget_ms = 6000;
  a.addresses = {"10.0.0.1", "10.0.0.2", "10.0.0.3"};
  a.targets = {0, 1};
  a.incoming = 2;
  const auto argv = net_probe_args(a);
  REQUIRE(argv[0] == kPreflightNetFlag);
  const NetProbeArgs b = parse_net_probe_args(std::vector<std::string>(argv.begin() + 1, argv.end()));
  CHECK(b.self == 2);
  CHECK(b.port == 29411);
  CHECK(b.addresses == a.addresses);
  CHECK(b.targets == a.targets);
  CHECK(b.incoming == 2);
  CHECK_THROWS(parse_net_probe_args({"5", "29411", "1", "1", "10.0.0.1", "-", "0"}));  // self beyond the list
  CHECK_THROWS(parse_net_probe_args({"0", "29411", "1", "1", "10.0.0.1", "3", "0"}));  // target beyond it
}

TEST_CASE("GPU jobs' ranks log NCCL's INIT/NET lines into gj's folder unless NCCL_DEBUG is set") {
  RankEnvSpec spec = decode_rank_env_spec("m.job,29500,2*2");
  spec.nccl_log_dir = "/run/gj,odd/nccl";  // a state dir may hold a comma
  const RankEnvSpec back = decode_rank_env_spec(encode_rank_env_spec(spec));
  CHECK(back == spec);
  const EnvMap env = {{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"}};
  const RankEnv r = rank_environment(env, back);
  const auto value = [&](const RankEnv& e, const std::string& name) -> std::string {
    for (const auto& [n, v] : e.set)
      if (n == name) return v;
    return "(unset)";
  };
  CHECK(value(r, "NCCL_DEBUG") == "INFO");
  CHECK(value(r, "NCCL_DEBUG_SUBSYS") == "INIT,NET");
  CHECK(value(r, "NCCL_DEBUG_FILE") == "/run/gj,odd/nccl/nccl-rank3.log");
  EnvMap yours = env;
  yours["NCCL_DEBUG"] = "WARN";
  CHECK(value(rank_environment(yours, back), "NCCL_DEBUG_FILE") == "(unset)");
  CHECK(value(rank_environment(env, decode_rank_env_spec("m.job,29500,2*2")), "NCCL_DEBUG") == "(unset)");

  LaunchPlan plan;
  plan.layout = Layout::BothGpu;
  plan.hosts = {{"m.job", 2}, {"w0.job", 2}};
  plan.rank_env = decode_rank_env_spec("m.job,29500,2*2");
  plan.command = rank_exec_command("/gj", *plan.rank_env, {"train.py"});
  AgentSettings s = default_settings();
  add_nccl_transport_log(plan, s);
  CHECK(decode_rank_env_spec(plan.command[2]).nccl_log_dir == "/run/gj-mpirun/nccl");
  plan.layout = Layout::BothCpu;
  plan.rank_env = decode_rank_env_spec("m.job,29500,2*2");
  plan.command = rank_exec_command("/gj", *plan.rank_env, {"train.py"});
  add_nccl_transport_log(plan, s);
  CHECK(decode_rank_env_spec(plan.command[2]).nccl_log_dir.empty());  // a CPU job: no NCCL
}

TEST_CASE("NCCL's INIT/NET lines give its network, devices and channel transports") {
  const std::string ib =
      "h:10:10 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
      "h:10:10 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so\n"
      "NCCL version 2.18.5+cuda12.2\n"
      "h:10:10 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE ; OOB eth0:10.0.0.1<0>\n"
      "h:10:10 [0] NCCL INFO Using network IB\n"
      "h:10:10 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"
      "h:10:10 [0] NCCL INFO Channel 00/0 : 1[1] -> 2[0] [send] via NET/IB/0\n";
  const NcclRankTransport t = parse_nccl_debug(ib);
  CHECK(t.network == "IB");
  CHECK(t.devices == std::vector<std::string>{"mlx5_0:1/IB", "mlx5_1:1/RoCE"});
  CHECK(t.via == std::set<std::string>{"NET/IB", "P2P"});
  CHECK(t.version == "2.18.5+cuda12.2");
  CHECK(parse_nccl_summary(render_nccl_summary(t)) == t);

  const NcclRankTransport sock = parse_nccl_debug(
      "h:1:1 [0] NCCL INFO NET/IB : No device found.\n"
      "h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0>\n"
      "h:1:1 [0] NCCL INFO Using network Socket\n");
  CHECK(sock.network == "Socket");
  CHECK(sock.devices == std::vector<std::string>{"eth0:10.0.0.2<0>"});

  const std::vector<PodRdma> rdma = {{"m.job", {"mlx5_0"}, std::nullopt}, {"w0.job", {}, std::string("mlx5_0")}};
  const auto all_ib = nccl_transport_report({{"m.job", t}, {"w0.job", t}}, rdma);
  CHECK(all_ib.line == "NCCL transport: IB (mlx5_0:1/IB, mlx5_1:1/RoCE) on 2 pod(s), NCCL 2.18.5+cuda12.2");
  CHECK(all_ib.warnings.empty());

  const auto on_sockets = nccl_transport_report({{"m.job", sock}, {"w0.job", sock}}, rdma);
  REQUIRE(on_sockets.warnings.size() == 1);
  CHECK(on_sockets.warnings[0].find("TCP sockets between the pods although m.job, w0.job have RDMA devices "
                                    "(/sys/class/infiniband: mlx5_0)") != std::string::npos);
  CHECK(on_sockets.warnings[0].find("NCCL_IB_HCA") != std::string::npos);
  CHECK(nccl_transport_report({{"m.job", sock}, {"w0.job", sock}}, {}).warnings.empty());  // no RDMA: sockets are right

  const auto mixed = nccl_transport_report({{"m.job", t}, {"w0.job", sock}}, {});
  CHECK(mixed.line == "NCCL transport: IB on m.job; Socket on w0.job");
  REQUIRE(mixed.warnings.size() == 1);
  CHECK(mixed.warnings[0].find("disagree") != std::string::npos);
}
