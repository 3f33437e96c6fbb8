// Which network NCCL chose, from the INIT/NET lines of its debug output (NCCL_DEBUG=INFO,
// NCCL_DEBUG_SUBSYS=INIT,NET, which every rank of a GPU job writes into a file of gj's:
// rank_env.h), and the master's one line per job with its warnings: NCCL on TCP sockets across
// pods that have RDMA devices, and pods that disagree. Pure.
//
// The lines it reads (NCCL 2.x):
//   host:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE ; OOB eth0:10.0.0.1<0>
//   host:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>
//   host:1:1 [0] NCCL INFO Using network IB          (or Socket, or a plugin's name)
//   host:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0
//   host:1:1 [0] NCCL INFO NCCL version 2.18.5+cuda12.2   (also "NCCL version 2.18.5+cuda12.2" alone)
#pragma once

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace gj {

struct NcclRankTransport {
  std::string network;               // "IB", "Socket", a plugin's name; "" when NCCL said none
  std::vector<std::string> devices;  // "mlx5_0:1/IB", "eth0:10.0.0.1<0>"
  std::set<std::string> via;         // channel transports: "NET/IB", "NET/Socket", "P2P", "SHM"
  std::string version;               // "2.18.5+cuda12.2"
  bool operator==(const NcclRankTransport& o) const {
    return network == o.network && devices == o.devices && via == o.via && version == o.version;
  }
};

// From a rank's NCCL debug file (other subsystems' lines are skipped).
NcclRankTransport parse_nccl_debug(const std::string& text);

// The one line a rank wrapper sends the master about its rank ("gj-nccl net=IB dev=mlx5_0:1/IB,...
// via=NET/IB,P2P version=2.18.5"), and back (nullopt for any other line).
std::string render_nccl_summary(const NcclRankTransport& t);
std::optional<NcclRankTransport> parse_nccl_summary(const std::string& line);

// A pod's RDMA facts, from the pre-flight probe (pod_facts.h).
struct PodRdma {
  std::string pod;
  std::vector<std::string> rdma_devices;  // /sys/class/infiniband
  std::optional<std::string> nccl_ib_hca;
};

struct NcclTransportReport {
  std::string line;                   // "NCCL transport: IB (mlx5_0:1/IB) on 4 pod(s)", or per pod
  std::vector<std::string> warnings;  // sockets while RDMA is there; pods that disagree
};

// ranks: (pod, its rank's transport), any number per pod. A pod's network is its ranks' (the
// first one's when they differ, which is named). A multi-pod job whose pods use sockets while
// they have RDMA devices or NCCL_IB_HCA: a warning naming those pods and the settings to look at.
// Pods on different networks: a warning naming which pods use which.
NcclTransportReport nccl_transport_report(const std::vector<std::pair<std::string, NcclRankTransport>>& ranks,
                                          const std::vector<PodRdma>& pods);

}  // namespace gj
