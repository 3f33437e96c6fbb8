#include "nccl_transport.h"

#include <algorithm>
#include <map>

#include "text.h"

namespace gj {
namespace {

// The text after "NCCL INFO " on a line, or nullopt.
std::optional<std::string> info_text(const std::string& line) {
  const auto at = line.find("NCCL INFO ");
  if (at == std::string::npos) return std::nullopt;
  return trim(line.substr(at + 10));
}

// "[0]mlx5_0:1/IB [1]mlx5_1:1/RoCE ; OOB eth0:..." -> mlx5_0:1/IB, mlx5_1:1/RoCE
std::vector<std::string> using_devices(const std::string& after_using) {
  std::vector<std::string> out;
  const std::string list = after_using.substr(0, after_using.find(';'));
  for (const auto& w : split(trim(list), ' ')) {
    if (w.empty()) continue;
    const auto close = w.find(']');
    out.push_back(w[0] == '[' && close != std::string::npos ? w.substr(close + 1) : w);
  }
  return out;
}

bool is_socket(const std::string& network) { return network == "Socket"; }

std::string pods_text(const std::vector<std::string>& pods) {
  std::vector<std::string> shown(pods.begin(), pods.begin() + std::min<std::size_t>(pods.size(), 8));
  return join(shown, ", ") + (pods.size() > 8 ? " and " + std::to_string(pods.size() - 8) + " more" : "");
}

}  // namespace

NcclRankTransport parse_nccl_debug(const std::string& text) {
  NcclRankTransport t;
  for (const auto& raw : split(text, '\n')) {
    const std::string line = trim(raw);
    const auto vpos = line.find("NCCL version ");
    if (vpos != std::string::npos && t.version.empty()) {
      const std::string rest = line.substr(vpos + 13);
      t.version = rest.substr(0, rest.find(' '));
    }
    const auto info = info_text(line);
    if (!info) continue;
    if (starts_with(*info, "Using network ")) {
      t.network = trim(info->substr(14));
    } else if (starts_with(*info, "NET/")) {
      // "NET/IB : Using [0]mlx5_0:1/IB ..." names the network and its devices; "NET/IB : No device found." not.
      const auto colon = info->find(" : Using ");
      if (colon != std::string::npos) {
        const std::string net = trim(info->substr(4, colon - 4));
        if (t.network.empty() || t.network == net) {
          t.network = net;
          t.devices = using_devices(info->substr(colon + 9));
        }
      }
    } else if (starts_with(*info, "Channel ")) {
      const auto via = info->find(" via ");
      if (via != std::string::npos) {
        std::string tr = trim(info->substr(via + 5));
        tr = tr.substr(0, tr.find(' '));
        // "NET/IB/0" -> "NET/IB", "P2P/IPC" -> "P2P", "SHM/direct/direct" -> "SHM"
        const auto parts = split(tr, '/');
        t.via.insert(parts[0] == "NET" && parts.size() > 1 ? "NET/" + parts[1] : parts[0]);
      }
    }
  }
  return t;
}

std::string render_nccl_summary(const NcclRankTransport& t) {
  const auto word = [](std::string s) {
    for (char& c : s)
      if (c == ' ' || static_cast<unsigned char>(c) < 0x20) c = '_';
    return s.empty() ? std::string("-") : s;
  };
  std::vector<std::string> devs, via(t.via.begin(), t.via.end());
  for (const auto& d : t.devices) devs.push_back(word(d));
  return "gj-nccl net=" + word(t.network) + " dev=" + (devs.empty() ? "-" : join(devs, ",")) +
         " via=" + (via.empty() ? "-" : join(via, ",")) + " version=" + word(t.version);
}

std::optional<NcclRankTransport> parse_nccl_summary(const std::string& line) {
  if (!starts_with(line, "gj-nccl ")) return std::nullopt;
  NcclRankTransport t;
  const auto value = [](const std::string& v) { return v == "-" ? std::string() : v; };
  for (const auto& field : split(trim(line.substr(8)), ' ')) {
    const auto eq = field.find('=');
    if (eq == std::string::npos) return std::nullopt;
    const std::string key = field.substr(0, eq), v = value(field.substr(eq + 1));
    if (key == "net") t.network = v;
    else if (key == "dev") {
      if (!v.empty()) t.devices = split(v, ',');
    } else if (key == "via") {
      if (!v.empty())
        for (const auto& x : split(v, ',')) t.via.insert(x);
    } else if (key == "version") t.version = v;
  }
  return t;
}

NcclTransportReport nccl_transport_report(const std::vector<std::pair<std::string, NcclRankTransport>>& ranks,
                                          const std::vector<PodRdma>& pods) {
  NcclTransportReport out;
  std::vector<std::string> order;
  std::map<std::string, NcclRankTransport> per_pod;
  for (const auto& [pod, t] : ranks) {
    auto it = per_pod.find(pod);
    if (it == per_pod.end()) {
      per_pod.emplace(pod, t);
      order.push_back(pod);
    } else if (it->second.network != t.network) {
      out.warnings.push_back("NCCL: ranks of pod " + pod + " use different networks (" + it->second.network + ", " +
                             t.network + "); check NCCL_IB_HCA and NCCL_SOCKET_IFNAME in that pod");
    }
  }
  if (order.empty()) return out;
  // By network: which pods use it, with the first pod's devices.
  std::map<std::string, std::vector<std::string>> by_net;
  for (const auto& pod : order) by_net[per_pod[pod].network].push_back(pod);
  const auto net_name = [](const std::string& n) { return n.empty() ? std::string("no network (one pod)") : n; };
  if (by_net.size() == 1) {
    const auto& t = per_pod[order.front()];
    out.line = "NCCL transport: " + net_name(t.network) + (t.devices.empty() ? "" : " (" + join(t.devices, ", ") + ")") +
               " on " + std::to_string(order.size()) + " pod(s)" + (t.version.empty() ? "" : ", NCCL " + t.version);
  } else {
    std::vector<std::string> parts;
    for (const auto& [net, ps] : by_net) parts.push_back(net_name(net) + " on " + pods_text(ps));
    out.line = "NCCL transport: " + join(parts, "; ");
    out.warnings.push_back("NCCL: the pods disagree on the network (" + join(parts, "; ") +
                           "): the job runs at the slowest one's speed; compare those pods' RDMA devices, "
                           "NCCL_IB_HCA, NCCL_IB_DISABLE and NCCL_NET");
  }
  if (order.size() < 2) return out;
  std::vector<std::string> sockets_with_rdma, what;
  for (const auto& pod : order) {
    if (!is_socket(per_pod[pod].network)) continue;
    for (const auto& p : pods)
      if (p.pod == pod && (!p.rdma_devices.empty() || p.nccl_ib_hca)) {
        sockets_with_rdma.push_back(pod);
        if (what.empty())
          what.push_back(p.rdma_devices.empty() ? "NCCL_IB_HCA=" + *p.nccl_ib_hca
                                                : "/sys/class/infiniband: " + join(p.rdma_devices, ","));
      }
  }
  if (!sockets_with_rdma.empty())
    out.warnings.push_back("NCCL uses TCP sockets between the pods although " + pods_text(sockets_with_rdma) +
                           " have RDMA devices (" + what.front() +
                           "): expect 4-5x slower collectives; check NCCL_IB_HCA, NCCL_IB_DISABLE, NCCL_NET, that the "
                           "image has libibverbs (rdma-core) and that the pods request the RDMA device resource");
  return out;
}

}  // namespace gj
