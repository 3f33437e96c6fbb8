#include "nccl_log.h"

#include <fstream>
#include <vector>

#include "nccl_transport.h"

namespace gj {

std::optional<std::string> nccl_summary_of_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::vector<char> buf(1 << 20);
  in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
  const NcclRankTransport t = parse_nccl_debug(std::string(buf.data(), static_cast<std::size_t>(in.gcount())));
  if (t.network.empty() && t.devices.empty() && t.via.empty()) return std::nullopt;
  return render_nccl_summary(t);
}

}  // namespace gj
