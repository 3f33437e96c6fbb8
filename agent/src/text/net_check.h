// The network pre-flight check (docs/agent.md, "Pre-flight checks"): which pod measures which
// link, the lines a probe prints, and which pod or link is far below the job's median. Pure.
//
// Every pod measures its links to three others in turn: the next pod in the host list's ring,
// the previous one, and (from 4 pods) the one across the ring (i + n/2); each link: the fastest
// of kNetPings round trips of 64 bytes, then the faster of kNetTransfers transfers of `bytes`,
// each acknowledged (a busy pod's scheduling only adds time, so the best figure is the link's).
// So each pod sends on up to 3 links and receives on up to 3, whatever the job's size: the cost
// per pod is fixed (3 x 2 x bytes each way) and the pods measure at once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gj {

inline constexpr int kNetPings = 10;
inline constexpr int kNetTransfers = 2;

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
  // The links behind `slow` (every link of a named pod, each named link), as (from, to): the
  // master measures them again, alone, before it believes them (a pod's CPU busy with the
  // other pods' transfers at that moment is no slow link).
  std::vector<std::pair<std::size_t, std::size_t>> suspects;
  std::vector<std::string> errors;   // links that could not be measured
  std::string summary;               // the job's medians, one line
};

// Pods: each pod's figure is the median of every link it sends or receives on; a pod whose
// bandwidth is below 1/kSlowFactor of the pods' median, or whose round trip is over kSlowFactor
// times the median and 1 ms more, is named. Links: one between two pods not named whose
// bandwidth is below 1/kLinkSlowFactor of the links' median, or whose round trip is over
// kLinkSlowFactor times the median and 1 ms more, is named (one measurement against a pod's six:
// a wider margin, so that a busy moment of a pod's CPU is no finding). Below 3 pods there is no
// median to compare with: nothing is named (the summary says so).
inline constexpr double kSlowFactor = 3.0;
inline constexpr double kLinkSlowFactor = 10.0;
NetFinding analyse_links(const std::vector<std::string>& pods, const std::vector<LinkResult>& links);

// `links` with each link measured again in `again` taking its best figures of both rounds.
std::vector<LinkResult> merge_remeasured(std::vector<LinkResult> links, const std::vector<LinkResult>& again);

// "1.2 GB/s", "850 MB/s"; "0.12 ms".
std::string rate_text(double bytes_per_s);
std::string rtt_text(double rtt_us);

}  // namespace gj
