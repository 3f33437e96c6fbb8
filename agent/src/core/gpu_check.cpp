#include "gpu_check.h"

#include <algorithm>

#include "quote.h"
#include "text.h"

namespace gj {
namespace {

// "0 GPU-8f6c... 0000:07:00.0 NVIDIA H100", at most `max` devices then "and N more".
std::string device_list(const std::vector<GpuDevice>& devices, std::size_t max = 16) {
  if (devices.empty()) return "none";
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < devices.size() && i < max; ++i) {
    const auto& d = devices[i];
    std::string p = std::to_string(i);
    if (!d.uuid.empty()) p += " " + d.uuid;
    if (!d.pci.empty()) p += " " + d.pci;
    if (!d.name.empty()) p += " " + d.name;
    parts.push_back(p);
  }
  std::string out = join(parts, ", ");
  if (devices.size() > max) out += " and " + std::to_string(devices.size() - max) + " more";
  return out;
}

std::string notes_of(const PodFacts& f, const std::string& visible_note) {
  std::vector<std::string> notes = f.notes;
  if (!visible_note.empty()) notes.insert(notes.begin(), visible_note);
  return notes.empty() ? "" : "; " + join(notes, "; ");
}

}  // namespace

GpuCheck check_gpus(const std::vector<PodGpuAnswer>& pods) {
  GpuCheck out;
  std::vector<std::string> checked;
  for (const auto& p : pods) {
    if (p.limit <= 0) continue;
    if (!p.facts) {
      out.warnings.push_back("GPU check: pod " + p.pod + " could not be asked (" + p.error + "); its GPUs are not checked");
      continue;
    }
    const PodFacts& f = *p.facts;
    if (f.source == GpuSource::None) {
      out.debug.push_back("GPU check: pod " + p.pod + " has no NVIDIA driver (no NVML, no /proc/driver/nvidia)" +
                          notes_of(f, "") + "; nothing checked there");
      continue;
    }
    const VisibleGpus visible = visible_gpus(f.devices, f.cuda_visible_devices);
    const auto seen = static_cast<std::int64_t>(visible.devices.size());
    if (seen < p.limit) {
      std::string cvd = f.cuda_visible_devices ? ", CUDA_VISIBLE_DEVICES=" + quoted_value(*f.cuda_visible_devices) : "";
      out.failures.push_back("pod " + p.pod + " sees " + std::to_string(seen) + " GPU(s) but " + p.limit_name + "=" +
                             std::to_string(p.limit) + " (from " + to_string(f.source) + ", " +
                             std::to_string(f.devices.size()) + " device(s) on the pod" + cvd +
                             "): " + device_list(visible.devices) + notes_of(f, visible.note) +
                             "; check the node's GPUs (nvidia-smi, the kernel log's Xid lines) and the pod's "
                             "CUDA_VISIBLE_DEVICES, or move the job off that node");
    }
    for (std::size_t i = 0; i < visible.devices.size(); ++i) {
      const auto& d = visible.devices[i];
      if (d.ecc_uncorrected > 0)
        out.failures.push_back("pod " + p.pod + " GPU " + std::to_string(i) + " (" + (d.uuid.empty() ? "?" : d.uuid) +
                               ", " + (d.pci.empty() ? "?" : d.pci) + ") reports " + std::to_string(d.ecc_uncorrected) +
                               " uncorrected ECC error(s) since the driver loaded; drain the node or reset the GPU");
    }
    checked.push_back(p.pod + " " + std::to_string(seen) + "/" + std::to_string(p.limit));
  }
  if (!checked.empty() && out.failures.empty())
    out.summary = "GPU check: " + std::to_string(checked.size()) + " pod(s) see their GPUs (seen/limit: " +
                  join(std::vector<std::string>(checked.begin(), checked.begin() + std::min<std::size_t>(checked.size(), 8)), ", ") +
                  (checked.size() > 8 ? ", ..." : "") + ")";
  return out;
}

}  // namespace gj
