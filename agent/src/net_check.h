// The network pre-flight check (docs/agent.md, "Pre-flight checks"): which pod measures which
// link, the lines a probe prints, and which pod or link is far below the job's median. Pure.
//
// Every pod measures its links to three others in turn: the next pod in the host list's ring,
// the previous one, and (from 4 pods) the one across the ring (i + n/2); each link: the median
// of kNetPings round trips of 64 bytes, then `bytes` sent and acknowledged. So each pod sends on
// up to 3 links and receives on up to 3, whatever the job's size: the cost per pod is fixed
// (3 x bytes each way) and the pods measure at once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gj {

inline constexpr int kNetPings = 10;

// The pods (indices into the host list) pod `self` of `n` measures, in order, each once.
std::vector<std::size_t> net_targets(std::size_t n, std::size_t self);
// How many pods measure their link to pod `self` (its probe serves that many).
std::size_t net_incoming(std::size_t n, std::size_t self);

// One measured link, from pod `from` to pod `to` (indices).
struct LinkResult {
  std::size_t from = 0;
  std::size_t to = 0;
  double rtt_us = -1;          // median round trip; -1: not measured
  double bytes_per_s = -1;     // -1: not measured
  std::string error;           // why not ("" when measured)
};

// "gj-net <from> <to> <rtt_us> <bytes_per_s> [error...]" and back. parse: nullopt for any other line.
std::string render_link(const LinkResult& r);
std::optional<LinkResult> parse_link(const std::string& line);

struct NetFinding {
  std::vector<std::string> slow;     // a pod or a link far below the median, with both numbers
  std::vector<std::string> errors;   // links that could not be measured
  std::string summary;               // the job's medians, one line
};

// Pods: each pod's figure is the median of every link it sends or receives on; a pod whose
// bandwidth is below 1/kSlowFactor of the pods' median, or whose round trip is over kSlowFactor
// times the median and 1 ms more, is named. Links: one whose bandwidth or round trip is that far
// from the links' median, between two pods not named, is named. Below 3 pods there is no median
// to compare with: nothing is named (the summary says so).
inline constexpr double kSlowFactor = 3.0;
NetFinding analyse_links(const std::vector<std::string>& pods, const std::vector<LinkResult>& links);

// "1.2 GB/s", "850 MB/s"; "0.12 ms".
std::string rate_text(double bytes_per_s);
std::string rtt_text(double rtt_us);

}  // namespace gj
