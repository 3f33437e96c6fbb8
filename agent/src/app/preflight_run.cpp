#include "preflight_run.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>

#include "agent_error.h"
#include "dry_run.h"
#include "exit_codes.h"
#include "gpu_check.h"
#include "monitor_line.h"
#include "net_check.h"
#include "pod_facts.h"
#include "preflight.h"
#include "quote.h"
#include "sys/capture.h"
#include "sys/gpu_probe.h"
#include "sys/host_facts.h"
#include "sys/net_probe.h"
#include "sys/run_many.h"
#include "text.h"

namespace gj {
namespace {

// The same hidden mode on every host of the plan: through ssh, or directly on this pod.
std::vector<std::vector<std::string>> on_every_pod(const LaunchPlan& plan, const PreflightPods& pods,
                                                   const std::vector<std::vector<std::string>>& args) {
  std::vector<std::vector<std::string>> argvs;
  for (std::size_t i = 0; i < plan.hosts.size(); ++i) {
    if (args[i].empty()) continue;  // this pod has no part in this round
    std::vector<std::string> local = {pods.self};
    local.insert(local.end(), args[i].begin(), args[i].end());
    if (pods.local_index && *pods.local_index == i) {
      argvs.push_back(local);
      continue;
    }
    std::vector<std::string> argv = pods.ssh_prefix;
    argv.push_back(plan.hosts[i].host);
    argv.push_back(shell_join(local));  // ssh hands the remote shell one string
    argvs.push_back(argv);
  }
  return argvs;
}

// The end of a probe's output, for an error line: its last non-empty line, quoted.
std::string last_line(const std::string& output) {
  const auto lines = split(trim(output), '\n');
  return lines.empty() ? "no output" : quoted_value(lines.back());
}

std::string how_it_ended(const RunResult& r) {
  if (!r.error.empty()) return r.error;
  if (r.timed_out) return "no answer within the time limit";
  return "exit status " + std::to_string(r.status) + ", " + last_line(r.output);
}

void log_lines(const std::vector<std::string>& lines, spdlog::level::level_enum level) {
  for (const auto& l : lines) spdlog::log(level, "{}", l);
}

std::vector<std::optional<PodFacts>> ask_pods(const LaunchPlan& plan, const AgentSettings& settings,
                                              const PreflightPods& pods, std::vector<std::string>& errors) {
  const std::vector<std::vector<std::string>> args(plan.hosts.size(), {kPreflightFactsFlag});
  const auto timeout = std::chrono::seconds(settings.ssh_connect_timeout_s + 20);
  const auto results = run_many(on_every_pod(plan, pods, args), timeout);
  std::vector<std::optional<PodFacts>> facts(plan.hosts.size());
  errors.assign(plan.hosts.size(), "");
  for (std::size_t i = 0; i < results.size(); ++i) {
    std::string error;
    if (results[i].error.empty() && !results[i].timed_out) facts[i] = parse_pod_facts(results[i].output, error);
    if (!facts[i]) errors[i] = error.empty() ? how_it_ended(results[i]) : error + " (" + how_it_ended(results[i]) + ")";
  }
  return facts;
}

void check_gpu_answers(const LaunchPlan& plan, const std::vector<std::optional<PodFacts>>& facts,
                       const std::vector<std::string>& errors) {
  std::vector<PodGpuAnswer> answers = gpu_questions(plan);
  bool any = false;
  for (std::size_t i = 0; i < answers.size(); ++i) {
    answers[i].facts = facts[i];
    answers[i].error = errors[i];
    any = any || answers[i].limit > 0;
  }
  if (!any) {
    spdlog::debug("GPU check: no pod has a GPU limit (a CPU job); nothing checked");
    return;
  }
  const GpuCheck check = check_gpus(answers);
  log_lines(check.debug, spdlog::level::debug);
  log_lines(check.warnings, spdlog::level::warn);
  if (!check.summary.empty()) spdlog::info("{}", check.summary);
  if (check.failures.empty()) return;
  log_lines(check.failures, spdlog::level::err);
  throw AgentError{exit_code::kPreflightFailed,
                   "GPU check failed before the job started: " + join(check.failures, "; ") +
                       (check.failures.size() > 1 ? "" : "") + " (GJ_PREFLIGHT=off skips the check)"};
}

// One round of the network probe: each pod measures its links of `which` and serves the others.
std::vector<LinkResult> measure_links(const LaunchPlan& plan, const AgentSettings& settings, const PreflightPods& pods,
                                      const std::vector<std::string>& addresses,
                                      const std::vector<std::pair<std::size_t, std::size_t>>& which) {
  const std::size_t n = plan.hosts.size();
  std::vector<NetProbeArgs> probe(n);
  std::vector<bool> takes_part(n, false);
  for (const auto& [from, to] : which) {
    probe[from].targets.push_back(to);
    ++probe[to].incoming;
    takes_part[from] = takes_part[to] = true;
  }
  std::vector<std::vector<std::string>> args(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!takes_part[i]) continue;
    probe[i].self = i;
    probe[i].port = settings.preflight_port;
    probe[i].bytes = settings.preflight_bytes;
    probe[i].budget_ms = kNetBudgetMs;
    probe[i].addresses = addresses;
    args[i] = net_probe_args(probe[i]);
  }
  const auto results = run_many(on_every_pod(plan, pods, args),
                                std::chrono::milliseconds(kNetBudgetMs) + std::chrono::seconds(settings.ssh_connect_timeout_s + 5));
  std::vector<LinkResult> links;
  std::size_t k = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!takes_part[i]) continue;
    const RunResult& r = results[k++];
    bool ended = false;
    for (const auto& line : split(r.output, '\n')) {
      if (const auto l = parse_link(line)) links.push_back(*l);
      ended = ended || trim(line) == "gj-net-end";
    }
    if (!ended) spdlog::warn("network check: pod {}'s probe failed: {}", plan.hosts[i].host, how_it_ended(r));
  }
  return links;
}

void check_network(const LaunchPlan& plan, const AgentSettings& settings, const PreflightPods& pods,
                   const std::vector<std::optional<PodFacts>>& facts) {
  const std::size_t n = plan.hosts.size();
  std::vector<std::string> addresses(n);
  std::string master_seen_as;
  for (std::size_t i = 0; i < n; ++i)
    if (facts[i]) {
      addresses[i] = facts[i]->address;
      if (master_seen_as.empty()) master_seen_as = facts[i]->ssh_client;
    }
  if (pods.local_index && *pods.local_index < n && addresses[*pods.local_index].empty())
    addresses[*pods.local_index] = master_seen_as;  // this pod as the others' sshd saw it
  std::vector<std::string> names;
  for (std::size_t i = 0; i < n; ++i) {
    names.push_back(plan.hosts[i].host);
    if (addresses[i].empty()) {
      spdlog::warn("network check skipped: no address for pod {} (its facts: {})", plan.hosts[i].host,
                   facts[i] ? "no SSH_CONNECTION" : "not read");
      return;
    }
  }
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::pair<std::size_t, std::size_t>> all;
  for (std::size_t i = 0; i < n; ++i)
    for (const auto t : net_targets(n, i)) all.emplace_back(i, t);
  std::vector<LinkResult> links = measure_links(plan, settings, pods, addresses, all);
  NetFinding finding = analyse_links(names, links);
  for (int again = 0; again < kNetRemeasures && !finding.suspects.empty(); ++again) {
    // Measured again, alone: only the suspects' pods take part, so the 3n transfers of the
    // first round no longer share their CPUs and links, and a busy moment of a pod's CPU
    // (another container's burst) has passed; each link keeps its best figures.
    spdlog::debug("network check: measuring {} suspect link(s) again", finding.suspects.size());
    links = merge_remeasured(links, measure_links(plan, settings, pods, addresses, finding.suspects));
    finding = analyse_links(names, links);
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  spdlog::info("{} ({} ms)", finding.summary, ms);
  for (const auto& l : links)
    if (l.error.empty() && l.from < n && l.to < n)
      spdlog::debug("network check: {} -> {}: {}, round trip {}", names[l.from], names[l.to], rate_text(l.bytes_per_s),
                    rtt_text(l.rtt_us));
  log_lines(finding.errors, spdlog::level::warn);
  if (finding.slow.empty()) return;
  const bool strict = settings.preflight == PreflightMode::Strict;
  for (const auto& s : finding.slow)
    spdlog::log(strict ? spdlog::level::err : spdlog::level::warn, "network check: {}", s);
  if (strict)
    throw AgentError{exit_code::kPreflightFailed, "network check failed before the job started (GJ_PREFLIGHT=strict): " +
                                                      join(finding.slow, "; ")};
}

}  // namespace

std::vector<PodRdma> run_preflight(const LaunchPlan& plan, const AgentSettings& settings, const PreflightPods& pods) {
  if (settings.preflight == PreflightMode::Off) {
    spdlog::debug("pre-flight checks off (GJ_PREFLIGHT=off)");
    return {};
  }
  const bool gpus = [&] {
    for (const auto& q : gpu_questions(plan))
      if (q.limit > 0) return true;
    return false;
  }();
  const bool network = network_check_runs(plan, settings);
  if (!gpus && !network) {
    spdlog::debug("pre-flight checks: a CPU job on one pod; nothing to check");
    return {};
  }
  std::vector<std::string> errors;
  const auto facts = ask_pods(plan, settings, pods, errors);
  check_gpu_answers(plan, facts, errors);
  if (network) check_network(plan, settings, pods, facts);
  std::vector<PodRdma> rdma;
  for (std::size_t i = 0; i < facts.size(); ++i)
    if (facts[i]) rdma.push_back({plan.hosts[i].host, facts[i]->rdma_devices, facts[i]->nccl_ib_hca});
  return rdma;
}

void log_nccl_transport(const std::vector<std::pair<std::string, std::string>>& rank_summaries,
                        const std::vector<PodRdma>& pods) {
  std::vector<std::pair<std::string, NcclRankTransport>> ranks;
  for (const auto& [pod, line] : rank_summaries)
    if (const auto t = parse_nccl_summary(line)) ranks.emplace_back(pod, *t);
  if (ranks.empty()) return;
  const NcclTransportReport report = nccl_transport_report(ranks, pods);
  spdlog::info("{}", report.line);
  log_lines(report.warnings, spdlog::level::warn);
}

int run_preflight_nvml(const EnvMap& env) {
  const AgentSettings s = resolve_settings_of(env, {"GJ_NVML_LIBRARY"});
  PodFacts f;
  if (auto devices = nvml_devices(s.nvml_library, f.notes)) {
    f.source = GpuSource::Nvml;
    f.devices = std::move(*devices);
  }
  std::fputs(render_pod_facts(f).c_str(), stdout);
  return exit_code::kOk;
}

int run_gpu_use(const EnvMap& env, const std::vector<std::string>& args) {
  const AgentSettings s = resolve_settings_of(env, {"GJ_NVML_LIBRARY"});
  const int pid = args.empty() ? 0 : std::atoi(args[0].c_str());
  std::string note;
  const auto use = pid > 0 ? nvml_process_use(s.nvml_library, pid, note) : std::nullopt;
  char util[32];
  std::snprintf(util, sizeof util, "%.3f", use ? use->utilization : 0.0);
  const std::string line = use ? format_monitor_line("gpu", {{"mem", std::to_string(use->memory_bytes)}, {"util", util},
                                                             {"devices", std::to_string(use->devices)}})
                               : format_monitor_line("gpu", {{"none", "1"}}, pid > 0 ? note : "no pid given");
  std::fputs((line + "\n").c_str(), stdout);
  return exit_code::kOk;
}

int run_preflight_facts(const EnvMap& env) {
  const AgentSettings s = resolve_settings_of(env, {"GJ_NVML_LIBRARY", "GJ_GPU_ROOT"});
  PodFacts f;
  // NVML in a child: a crash of the driver's library in this static binary (sys/gpu_probe.h)
  // costs the NVML answer, not the pod's.
  try {
    const CaptureResult r = run_and_capture({self_executable(), kPreflightNvmlFlag}, 64 * 1024, std::chrono::seconds(15));
    std::string error;
    if (const auto nvml = parse_pod_facts(r.output, error)) {
      f.source = nvml->source;
      f.devices = nvml->devices;
      f.notes = nvml->notes;
    } else {
      f.notes.push_back("the NVML probe failed (status " + std::to_string(r.status) + ": " + error + ")");
    }
  } catch (const LaunchError& e) {
    f.notes.push_back("the NVML probe failed: " + e.message);
  }
  if (f.source == GpuSource::None) {
    if (auto devices = proc_devices(s.gpu_root, f.notes)) {
      f.source = GpuSource::Proc;
      f.devices = std::move(*devices);
      f.notes.clear();  // NVML's absence is expected where the proc tree answers
      f.notes.push_back("NVML not available: devices from the driver's proc tree (no ECC counts)");
    }
  }
  f.cuda_visible_devices = env_value(env, "CUDA_VISIBLE_DEVICES");
  const auto [server, client] = ssh_connection_addresses(env_value(env, "SSH_CONNECTION"));
  f.address = server;
  f.ssh_client = client;
  f.rdma_devices = rdma_devices(s.gpu_root);
  f.nccl_ib_hca = env_value(env, "NCCL_IB_HCA");
  std::fputs(render_pod_facts(f).c_str(), stdout);
  return exit_code::kOk;
}

int run_preflight_net(const std::vector<std::string>& args) {
  const NetProbeArgs a = parse_net_probe_args(args);
  NetProbeOptions o;
  o.self = a.self;
  o.addresses = a.addresses;
  o.port = a.port;
  o.bytes = a.bytes;
  o.budget = std::chrono::milliseconds(a.budget_ms);
  o.targets = a.targets;
  o.incoming = a.incoming;
  std::string out;
  for (const auto& r : run_net_probe(o)) out += render_link(r) + "\n";
  out += "gj-net-end\n";
  std::fputs(out.c_str(), stdout);
  return exit_code::kOk;
}

}  // namespace gj
