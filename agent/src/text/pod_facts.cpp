#include "pod_facts.h"

#include <algorithm>

#include "quote.h"
#include "text.h"

namespace gj {
namespace {

constexpr const char* kHeader = "gj-facts 1";
constexpr const char* kEnd = "gj-facts-end";

// A field that must stay one word: "-" when empty, spaces and control bytes as '?'.
std::string word(const std::string& s) {
  if (s.empty()) return "-";
  std::string out = escaped_value(s);
  for (char& c : out)
    if (c == ' ') c = '?';
  return out;
}

std::string unword(const std::string& s) { return s == "-" ? "" : s; }

// The next space-separated field of `rest`, removed from it.
std::string take_field(std::string& rest) {
  const auto sp = rest.find(' ');
  std::string f = rest.substr(0, sp);
  rest = sp == std::string::npos ? "" : rest.substr(sp + 1);
  return f;
}

bool parse_int(const std::string& s, std::int64_t& out) {
  if (s.empty() || s.size() > 18) return false;
  const bool neg = s[0] == '-';
  if (neg && s.size() == 1) return false;
  std::int64_t v = 0;
  for (std::size_t i = neg ? 1 : 0; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  out = neg ? -v : v;
  return true;
}

// "Key:   value" -> value, for the proc information file.
std::optional<std::string> proc_field(const std::string& text, const std::string& key) {
  for (const auto& line : split(text, '\n')) {
    const auto colon = line.find(':');
    if (colon != std::string::npos && trim(line.substr(0, colon)) == key) return trim(line.substr(colon + 1));
  }
  return std::nullopt;
}

bool is_index(const std::string& s) {
  return !s.empty() && s.size() < 6 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

const char* to_string(GpuSource s) {
  switch (s) {
    case GpuSource::Nvml: return "nvml";
    case GpuSource::Proc: return "proc";
    case GpuSource::None: break;
  }
  return "none";
}

std::string render_pod_facts(const PodFacts& f) {
  std::string out = std::string(kHeader) + "\n";
  out += std::string("gj-facts-source ") + to_string(f.source) + "\n";
  for (const auto& d : f.devices)
    out += "gj-facts-gpu " + word(d.uuid) + " " + word(d.pci) + " " + std::to_string(d.ecc_uncorrected) + " " +
           escaped_value(d.name) + "\n";
  if (f.cuda_visible_devices) out += "gj-facts-cuda-visible " + escaped_value(*f.cuda_visible_devices) + "\n";
  for (const auto& n : f.notes) out += "gj-facts-note " + escaped_value(n) + "\n";
  if (!f.address.empty()) out += "gj-facts-address " + word(f.address) + "\n";
  if (!f.ssh_client.empty()) out += "gj-facts-ssh-client " + word(f.ssh_client) + "\n";
  for (const auto& r : f.rdma_devices) out += "gj-facts-rdma " + word(r) + "\n";
  if (f.nccl_ib_hca) out += "gj-facts-nccl-ib-hca " + escaped_value(*f.nccl_ib_hca) + "\n";
  return out + kEnd + "\n";
}

std::optional<PodFacts> parse_pod_facts(const std::string& output, std::string& error) {
  PodFacts f;
  bool header = false;
  for (std::string line : split(output, '\n')) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!starts_with(line, "gj-facts")) continue;
    if (line == kHeader) {
      header = true;
      continue;
    }
    if (!header) {
      error = "a facts line before the header " + quoted_value(kHeader) + " (an older gj-mpirun on the pod?)";
      return std::nullopt;
    }
    if (line == kEnd) return f;
    const auto sp = line.find(' ');
    const std::string key = line.substr(0, sp);
    std::string rest = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (key == "gj-facts-source") {
      if (rest == "nvml") f.source = GpuSource::Nvml;
      else if (rest == "proc") f.source = GpuSource::Proc;
      else if (rest == "none") f.source = GpuSource::None;
      else {
        error = "unknown GPU source " + quoted_value(rest);
        return std::nullopt;
      }
    } else if (key == "gj-facts-gpu") {
      GpuDevice d;
      d.uuid = unword(take_field(rest));
      d.pci = unword(take_field(rest));
      if (!parse_int(take_field(rest), d.ecc_uncorrected)) {
        error = "malformed GPU line " + quoted_value(line);
        return std::nullopt;
      }
      d.name = rest;
      f.devices.push_back(d);
    } else if (key == "gj-facts-cuda-visible") {
      f.cuda_visible_devices = rest;
    } else if (key == "gj-facts-note") {
      f.notes.push_back(rest);
    } else if (key == "gj-facts-address") {
      f.address = unword(rest);
    } else if (key == "gj-facts-ssh-client") {
      f.ssh_client = unword(rest);
    } else if (key == "gj-facts-rdma") {
      f.rdma_devices.push_back(unword(rest));
    } else if (key == "gj-facts-nccl-ib-hca") {
      f.nccl_ib_hca = rest;
    }  // other keys: a newer pod's facts this master does not know; skipped
  }
  error = header ? "the facts end early (no " + std::string(kEnd) + " line): the probe was cut short"
                 : "no facts in the output (no " + quoted_value(kHeader) + " line)";
  return std::nullopt;
}

std::pair<std::string, std::string> ssh_connection_addresses(const std::optional<std::string>& ssh_connection) {
  if (!ssh_connection) return {};
  const auto f = split(trim(*ssh_connection), ' ');
  if (f.size() != 4 || f[0].empty() || f[2].empty()) return {};
  return {f[2], f[0]};
}

GpuDevice parse_proc_gpu_information(const std::string& text, const std::string& bus_id) {
  GpuDevice d;
  d.name = proc_field(text, "Model").value_or("");
  d.uuid = proc_field(text, "GPU UUID").value_or("");
  d.pci = proc_field(text, "Bus Location").value_or(bus_id);
  return d;
}

VisibleGpus visible_gpus(const std::vector<GpuDevice>& devices, const std::optional<std::string>& cuda_visible_devices) {
  VisibleGpus out;
  if (!cuda_visible_devices) {
    out.devices = devices;
    return out;
  }
  std::vector<std::size_t> chosen;
  for (const std::string& raw : split(*cuda_visible_devices, ',')) {
    const std::string entry = trim(raw);
    std::optional<std::size_t> index;
    if (is_index(entry)) {
      if (std::stoul(entry) < devices.size()) index = std::stoul(entry);
    } else if (!entry.empty()) {
      // A UUID or a unique prefix of one ("GPU-8f6c"); CUDA also takes it without "GPU-".
      const std::string want = starts_with(entry, "GPU-") ? entry : "GPU-" + entry;
      std::size_t matches = 0;
      for (std::size_t i = 0; i < devices.size(); ++i)
        if (!devices[i].uuid.empty() && starts_with(devices[i].uuid, want)) {
          index = i;
          ++matches;
        }
      if (matches > 1) index.reset();
    }
    if (!index) {
      out.note = "CUDA_VISIBLE_DEVICES=" + quoted_value(*cuda_visible_devices) + " ends at " + quoted_value(entry) +
                 ", which names none of the " + std::to_string(devices.size()) + " device(s)";
      break;
    }
    if (std::find(chosen.begin(), chosen.end(), *index) != chosen.end()) {
      out.note = "CUDA_VISIBLE_DEVICES=" + quoted_value(*cuda_visible_devices) + " names device " + quoted_value(entry) +
                 " twice";
      break;
    }
    chosen.push_back(*index);
  }
  for (const auto i : chosen) out.devices.push_back(devices[i]);
  return out;
}

}  // namespace gj
