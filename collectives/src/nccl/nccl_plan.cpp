#include "nccl_plan.h"
#include "nccl_search.h"

#include <cstring>
#include <map>
#include <set>

#include "nccl_buffer.h"
#include "nccl_watchdog.h"

#include "../dtype.h"
#include "../error.h"

namespace gj::nccl {

ncclDataType_t to_nccl(gjDataType_t dtype) {
  switch (dtype) {
    case gjFloat32: return ncclFloat32;
    case gjFloat64: return ncclFloat64;
    case gjFloat16: return ncclFloat16;
    case gjBfloat16: return ncclBfloat16;
    case gjInt32: return ncclInt32;
    case gjInt64: return ncclInt64;
    case gjUint8: return ncclUint8;
    default: break;
  }
  throw Error(gjInvalidArgument, "NCCL backend: dtype=" + std::to_string(dtype) + " is not a gjDataType_t");
}

ScaledPlan plan_scaled(gjDataType_t dtype, gjRedOp_t op, int nranks, double pre, double post) {
  ScaledPlan p{plan_allreduce(dtype, op, nranks)};
  p.postscale = post == 1.0 ? 0.0 : post;
  if (pre == 1.0) return p;
  if (is_floating(dtype) && op == gjAvg) {
    // One pre-scale pass: pre times the 1/n that avg divides by before the sum.
    p.reduce.op = ncclSum;
    p.reduce.prescale = pre / nranks;
  } else {
    p.reduce.prescale = pre;
  }
  return p;
}

Movement to_movement(gjDataType_t dtype, std::size_t count) {
  switch (dtype) {
    case gjInt8: return {ncclInt8, count};
    case gjInt16: return {ncclUint8, count * 2};
    case gjBool:
    case gjByte: return {ncclUint8, count};
    default: return {to_nccl(dtype), count};
  }
}

PerRankPlan plan_per_rank(const std::size_t* counts, int nranks) {
  if (nranks < 1) throw Error(gjInternalError, "plan_per_rank: nranks=" + std::to_string(nranks));
  PerRankPlan p;
  p.equal = true;
  p.count = counts[0];
  for (int r = 0; r < nranks; ++r) {
    if (counts[r] != counts[0]) p.equal = false;
    if (counts[r] > 0) p.slices.push_back(Slice{r, p.total, counts[r]});
    p.total += counts[r];
  }
  if (p.equal) p.slices.clear();
  else p.count = 0;
  return p;
}

BufferAction plan_buffer_use(std::size_t have_bytes, bool allocated, std::size_t need_bytes, bool capturing) {
  if (allocated && need_bytes <= have_bytes) return BufferAction::Reuse;
  return capturing ? BufferAction::RefuseCapture : BufferAction::Grow;
}

std::string shared_device(const std::vector<Placement>& ranks, int nccl_version, bool multi_rank_gpu_enabled) {
  if (nccl_version >= 23000 && multi_rank_gpu_enabled) return "";
  for (std::size_t a = 0; a < ranks.size(); ++a) {
    for (std::size_t b = a + 1; b < ranks.size(); ++b) {
      if (ranks[a].host_hash != ranks[b].host_hash ||
          std::strncmp(ranks[a].bus_id, ranks[b].bus_id, sizeof ranks[a].bus_id) != 0)
        continue;
      return "ranks " + std::to_string(a) + " and " + std::to_string(b) + " both use the CUDA device at PCI " +
             std::string(ranks[a].bus_id, strnlen(ranks[a].bus_id, sizeof ranks[a].bus_id)) + " on host " +
             std::string(ranks[a].host, strnlen(ranks[a].host, sizeof ranks[a].host)) + ", which NCCL " +
             version_string(nccl_version) +
             " refuses (2.30+ allows it with NCCL_MULTI_RANK_GPU_ENABLE=1); device buffers are not supported on "
             "this communicator, host buffers are. Fix: one device per rank (cudaSetDevice(local_rank) / "
             "torch.cuda.set_device(hvd.local_rank())), no more ranks per node than GPUs";
    }
  }
  return "";
}

std::uint64_t host_hash(const std::string& hostname, const std::string& boot_id, const std::string& nccl_hostid) {
  const std::string id = !nccl_hostid.empty() ? nccl_hostid : hostname + boot_id;
  std::uint64_t h = 1469598103934665603ull;
  for (const unsigned char c : id) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string too_many_ranks(const std::vector<VisibleDevices>& ranks, int nccl_version, bool multi_rank_gpu_enabled) {
  if (nccl_version >= 23000 && multi_rank_gpu_enabled) return "";
  struct Host {
    std::string name;
    int ranks = 0;
    bool unlisted = false;  // some rank sees more devices than it lists: never refused
    std::set<std::string> devices;
  };
  std::map<std::uint64_t, Host> hosts;
  for (const VisibleDevices& r : ranks) {
    Host& h = hosts[r.host_hash];
    ++h.ranks;
    h.name = std::string(r.host, strnlen(r.host, sizeof r.host));
    if (r.count > VisibleDevices::kMaxDevices) h.unlisted = true;
    for (int d = 0; d < r.count && d < VisibleDevices::kMaxDevices; ++d)
      h.devices.insert(std::string(r.bus_ids[d], strnlen(r.bus_ids[d], sizeof r.bus_ids[d])));
  }
  for (const auto& entry : hosts) {
    const Host& h = entry.second;
    const int n = static_cast<int>(h.devices.size());
    if (h.unlisted || n == 0 || h.ranks <= n) continue;
    return std::to_string(h.ranks) + " ranks on host " + h.name + " but only " + std::to_string(n) + " CUDA device" +
           (n == 1 ? "" : "s") + " visible to them, so two ranks would share a device, which NCCL " +
           version_string(nccl_version) +
           " refuses: device buffers (CUDA tensors) could never be reduced. Fix: start at most " + std::to_string(n) +
           " ranks per node (e.g. mpirun -npernode " + std::to_string(n) +
           "), or for a job that uses host buffers only set GJ_COLL_BACKEND=mpi (NCCL >= 2.30 also lets ranks share "
           "a device with NCCL_MULTI_RANK_GPU_ENABLE=1)";
  }
  return "";
}

Verdict judge(ncclResult_t async_state, long oldest_pending_ms, long timeout_ms) {
  if (async_state != ncclSuccess && async_state != ncclInProgress) return Verdict::AsyncError;
  if (timeout_ms > 0 && oldest_pending_ms > timeout_ms) return Verdict::TimedOut;
  return Verdict::Healthy;
}

AllreducePlan plan_allreduce(gjDataType_t dtype, gjRedOp_t op, int nranks) {
  if (nranks < 1) throw Error(gjInternalError, "plan_allreduce: nranks=" + std::to_string(nranks));
  AllreducePlan p{to_nccl(dtype), ncclSum};
  switch (op) {
    case gjSum: p.op = ncclSum; return p;
    case gjMin: p.op = ncclMin; return p;
    case gjMax: p.op = ncclMax; return p;
    case gjProd: p.op = ncclProd; return p;
    case gjAvg:
      if (!is_floating(dtype)) {
        if (nranks > 1) p.postdivide = nranks;
      } else if ((nranks & (nranks - 1)) == 0) {
        p.op = ncclAvg;
      } else {
        p.prescale = 1.0 / nranks;
      }
      return p;
    default: break;
  }
  throw Error(gjInvalidArgument, "NCCL backend: op=" + std::to_string(op) + " is not a gjRedOp_t");
}

std::string describe(const Operation& op) {
  std::string s = std::string(op.call) + "(count=" + std::to_string(op.count) + ", dtype=" + dtype_name(op.dtype);
  if (op.root >= 0) s += ", root=" + std::to_string(op.root);
  if (op.root == Operation::kReduction) s += std::string(", op=") + op_name(op.op);
  return s + ")";
}

long poll_pause_us(long elapsed_us) {
  constexpr long kYieldUs = 2000, kMinUs = 20, kMaxUs = 1000;
  if (elapsed_us < kYieldUs) return 0;
  const long pause = elapsed_us / 32;
  return pause < kMinUs ? kMinUs : pause > kMaxUs ? kMaxUs : pause;
}

}  // namespace gj::nccl
