#include "gpu_probe.h"

#include <dirent.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

namespace gj {
namespace {

// NVML's C ABI as nvml.h declares it (stable across driver versions: these are the _v2/_v3
// names every driver since 2018 exports).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
struct NvmlPciInfo {  // nvmlPciInfo_t
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct NvmlProcessInfo {  // nvmlProcessInfo_t (the _v2/_v3 calls' layout)
  unsigned pid;
  unsigned long long usedGpuMemory;
  unsigned gpuInstanceId, computeInstanceId;
};
struct NvmlUtilization {  // nvmlUtilization_t
  unsigned gpu, memory;
};
constexpr int kNvmlErrorInsufficientSize = 7;
constexpr int kNvmlMemoryErrorUncorrected = 1;
constexpr int kNvmlVolatileEcc = 0;

template <typename F>
F symbol(void* lib, const char* name) {
  return reinterpret_cast<F>(::dlsym(lib, name));
}

std::vector<std::string> list_dir(const std::string& path, bool& exists) {
  std::vector<std::string> out;
  DIR* d = ::opendir(path.c_str());
  exists = d != nullptr;
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string under(const std::string& root, const std::string& path) {
  if (root.empty() || root == "/") return path;
  return (root.back() == '/' ? root.substr(0, root.size() - 1) : root) + path;
}

}  // namespace

std::optional<std::vector<GpuDevice>> nvml_devices(const std::string& library, std::vector<std::string>& notes) {
  void* lib = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = ::dlerror();
    notes.push_back("NVML not loaded (" + library + ": " + (e ? e : "?") + ")");
    return std::nullopt;
  }
  const auto init = symbol<nvmlReturn_t (*)()>(lib, "nvmlInit_v2");
  const auto shutdown = symbol<nvmlReturn_t (*)()>(lib, "nvmlShutdown");
  const auto count_fn = symbol<nvmlReturn_t (*)(unsigned*)>(lib, "nvmlDeviceGetCount_v2");
  const auto handle_fn = symbol<nvmlReturn_t (*)(unsigned, nvmlDevice_t*)>(lib, "nvmlDeviceGetHandleByIndex_v2");
  const auto name_fn = symbol<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned)>(lib, "nvmlDeviceGetName");
  const auto uuid_fn = symbol<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned)>(lib, "nvmlDeviceGetUUID");
  const auto pci_fn = symbol<nvmlReturn_t (*)(nvmlDevice_t, NvmlPciInfo*)>(lib, "nvmlDeviceGetPciInfo_v3");
  const auto ecc_fn = symbol<nvmlReturn_t (*)(nvmlDevice_t, int, int, unsigned long long*)>(lib, "nvmlDeviceGetTotalEccErrors");
  const auto error_fn = symbol<const char* (*)(nvmlReturn_t)>(lib, "nvmlErrorString");
  const auto error_text = [&](nvmlReturn_t r) {
    const char* s = error_fn ? error_fn(r) : nullptr;
    return "error " + std::to_string(r) + (s ? std::string(": ") + s : std::string());
  };
  if (!init || !count_fn || !handle_fn) {
    notes.push_back("NVML " + library + " lacks nvmlInit_v2/nvmlDeviceGetCount_v2/nvmlDeviceGetHandleByIndex_v2");
    ::dlclose(lib);
    return std::nullopt;
  }
  if (const nvmlReturn_t r = init(); r != 0) {
    notes.push_back("nvmlInit failed (" + error_text(r) + ")");
    ::dlclose(lib);
    return std::nullopt;
  }
  std::vector<GpuDevice> out;
  unsigned count = 0;
  if (const nvmlReturn_t r = count_fn(&count); r != 0) notes.push_back("nvmlDeviceGetCount failed (" + error_text(r) + ")");
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t h = nullptr;
    if (const nvmlReturn_t r = handle_fn(i, &h); r != 0) {
      notes.push_back("NVML device " + std::to_string(i) + " cannot be opened (" + error_text(r) + ")");
      continue;
    }
    GpuDevice d;
    char text[96] = {};
    if (name_fn && name_fn(h, text, sizeof text) == 0) d.name = text;
    std::fill(std::begin(text), std::end(text), 0);
    if (uuid_fn && uuid_fn(h, text, sizeof text) == 0) d.uuid = text;
    NvmlPciInfo pci{};
    if (pci_fn && pci_fn(h, &pci) == 0) d.pci = std::string(pci.busId, strnlen(pci.busId, sizeof pci.busId));
    unsigned long long ecc = 0;
    if (ecc_fn && ecc_fn(h, kNvmlMemoryErrorUncorrected, kNvmlVolatileEcc, &ecc) == 0)
      d.ecc_uncorrected = static_cast<std::int64_t>(ecc);
    out.push_back(d);
  }
  if (shutdown) shutdown();
  // Not closed: drivers' NVML has been seen to leave threads behind that dlclose would unmap.
  return out;
}

std::optional<GpuUse> nvml_process_use(const std::string& library, int pid, std::string& note) {
  void* lib = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = ::dlerror();
    note = "NVML not loaded (" + library + ": " + (e ? e : "?") + ")";
    return std::nullopt;
  }
  const auto init = symbol<nvmlReturn_t (*)()>(lib, "nvmlInit_v2");
  const auto shutdown = symbol<nvmlReturn_t (*)()>(lib, "nvmlShutdown");
  const auto count_fn = symbol<nvmlReturn_t (*)(unsigned*)>(lib, "nvmlDeviceGetCount_v2");
  const auto handle_fn = symbol<nvmlReturn_t (*)(unsigned, nvmlDevice_t*)>(lib, "nvmlDeviceGetHandleByIndex_v2");
  using ProcsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned*, NvmlProcessInfo*);
  auto procs_fn = symbol<ProcsFn>(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
  if (!procs_fn) procs_fn = symbol<ProcsFn>(lib, "nvmlDeviceGetComputeRunningProcesses_v2");
  const auto util_fn = symbol<nvmlReturn_t (*)(nvmlDevice_t, NvmlUtilization*)>(lib, "nvmlDeviceGetUtilizationRates");
  if (!init || !count_fn || !handle_fn || !procs_fn || !util_fn) {
    note = "NVML " + library + " lacks nvmlInit_v2, nvmlDeviceGetComputeRunningProcesses_v3/_v2 or nvmlDeviceGetUtilizationRates";
    return std::nullopt;
  }
  if (const nvmlReturn_t r = init(); r != 0) {
    note = "nvmlInit failed (error " + std::to_string(r) + ")";
    return std::nullopt;
  }
  GpuUse use;
  double util_sum = 0;
  unsigned count = 0;
  if (count_fn(&count) != 0) count = 0;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t h = nullptr;
    if (handle_fn(i, &h) != 0) continue;
    std::vector<NvmlProcessInfo> procs(16);
    unsigned n = static_cast<unsigned>(procs.size());
    nvmlReturn_t r = procs_fn(h, &n, procs.data());
    if (r == kNvmlErrorInsufficientSize) {  // n now says how many
      procs.resize(n + 8);
      n = static_cast<unsigned>(procs.size());
      r = procs_fn(h, &n, procs.data());
    }
    if (r != 0) continue;
    bool on_it = false;
    for (unsigned k = 0; k < n && k < procs.size(); ++k)
      if (static_cast<int>(procs[k].pid) == pid) {
        on_it = true;
        // NVML_VALUE_NOT_AVAILABLE (all ones) where the driver cannot tell (Windows WDDM): none.
        if (procs[k].usedGpuMemory != ~0ULL) use.memory_bytes += static_cast<std::int64_t>(procs[k].usedGpuMemory);
      }
    if (!on_it) continue;
    ++use.devices;
    NvmlUtilization u{};
    if (util_fn(h, &u) == 0) util_sum += u.gpu / 100.0;
  }
  if (use.devices > 0) use.utilization = util_sum / use.devices;
  if (shutdown) shutdown();
  return use;  // not dlclose'd (nvml_devices says why)
}

std::optional<std::vector<GpuDevice>> proc_devices(const std::string& root, std::vector<std::string>& notes) {
  const std::string dir = under(root, "/proc/driver/nvidia/gpus");
  bool exists = false;
  const auto ids = list_dir(dir, exists);
  if (!exists) return std::nullopt;
  std::vector<GpuDevice> out;
  for (const auto& id : ids) {
    std::ifstream in(dir + "/" + id + "/information");
    if (!in) {
      notes.push_back(dir + "/" + id + "/information cannot be read");
      continue;
    }
    std::ostringstream text;
    text << in.rdbuf();
    out.push_back(parse_proc_gpu_information(text.str(), id));
  }
  return out;
}

std::vector<std::string> rdma_devices(const std::string& root) {
  bool exists = false;
  return list_dir(under(root, "/sys/class/infiniband"), exists);
}

}  // namespace gj
