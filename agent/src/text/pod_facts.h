// What one pod tells the master before the job starts (issue 55, docs/agent.md "Pre-flight
// checks"): the GPUs its processes can open, the address the master's ssh reached it at, its RDMA
// devices. The pod's own gj-mpirun gathers them (`gj-mpirun --preflight-facts`, sys/gpu_probe.h)
// and prints them as lines; the master reads those lines from ssh's output. Pure: the line
// protocol, /proc/driver/nvidia's information file, CUDA_VISIBLE_DEVICES' selection.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gj {

struct GpuDevice {
  std::string uuid;  // "GPU-8f6c..." ("" unknown)
  std::string pci;   // "0000:07:00.0" ("" unknown)
  std::string name;  // "NVIDIA H100 80GB HBM3"
  std::int64_t ecc_uncorrected = -1;  // volatile uncorrected ECC errors; -1: not reported
  bool operator==(const GpuDevice& o) const {
    return uuid == o.uuid && pci == o.pci && name == o.name && ecc_uncorrected == o.ecc_uncorrected;
  }
};

// Where the device list came from: NVML (the driver's library), the proc tree of the driver
// (no NVML in the image), or nowhere (no driver: a CPU node).
enum class GpuSource { None, Nvml, Proc };
const char* to_string(GpuSource s);

struct PodFacts {
  GpuSource source = GpuSource::None;
  std::vector<GpuDevice> devices;                   // every device the pod's processes can open
  std::optional<std::string> cuda_visible_devices;  // the pod's CUDA_VISIBLE_DEVICES, when set
  std::vector<std::string> notes;                   // what the probe could not read, and why
  std::string address;                              // the pod's address as ssh reached it ("" unknown)
  std::string ssh_client;                           // the address ssh came from: the master's, as this pod sees it
  std::vector<std::string> rdma_devices;            // /sys/class/infiniband entries (mlx5_0, ...)
  std::optional<std::string> nccl_ib_hca;           // the pod's NCCL_IB_HCA, when set
};

// The lines `gj-mpirun --preflight-facts` prints: "gj-facts 1" first, "gj-facts-end" last, one
// line per fact between them; fields never hold spaces but for the last one (a device's name,
// a note), control bytes escaped.
std::string render_pod_facts(const PodFacts& facts);

// The facts from a probe's output. Lines that are not the protocol's (a login banner, a shell
// startup file's echo) are skipped. nullopt with `error` set when the header or the end line is
// missing or a line is malformed (a probe cut short, an older gj-mpirun on the pod).
std::optional<PodFacts> parse_pod_facts(const std::string& output, std::string& error);

// SSH_CONNECTION ("client port server port") -> {server address, client address}; empty ones
// when it is absent or malformed (not an ssh session: the master's own pod).
std::pair<std::string, std::string> ssh_connection_addresses(const std::optional<std::string>& ssh_connection);

// One device from /proc/driver/nvidia/gpus/<bus id>/information ("Model:", "GPU UUID:", "Bus
// Location:" lines); the bus id (the directory's name) is the PCI id when the file lacks it.
GpuDevice parse_proc_gpu_information(const std::string& text, const std::string& bus_id);

// The devices a CUDA program of the pod uses: all of them without CUDA_VISIBLE_DEVICES, else
// its entries in order (an index, a UUID or a UUID prefix), as CUDA reads it: the list ends at
// the first entry that names no device, or names one twice. `note` says why it ended early.
struct VisibleGpus {
  std::vector<GpuDevice> devices;
  std::string note;
};
VisibleGpus visible_gpus(const std::vector<GpuDevice>& devices, const std::optional<std::string>& cuda_visible_devices);

}  // namespace gj
