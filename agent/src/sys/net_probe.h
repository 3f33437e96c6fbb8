// One pod's side of the network pre-flight check (net_check.h): it serves the pods that measure
// their link to it and measures its own links, all within one time budget, so that a pod that
// never answers costs the job that budget and no more. Plain TCP between the pods' addresses on
// one port (GJ_PREFLIGHT_PORT): the path the job's own MPI/NCCL socket traffic takes.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "net_check.h"

namespace gj {

struct NetProbeOptions {
  std::size_t self = 0;                // this pod's index in `addresses`
  std::vector<std::string> addresses;  // every pod's IP address, host-list order
  int port = 0;
  std::int64_t bytes = 4 << 20;        // sent on each link
  std::chrono::milliseconds budget{5000};
  std::vector<std::size_t> targets;  // the pods this one measures (net_targets)
  std::size_t incoming = 0;          // how many pods measure their link to this one (net_incoming)
};

// Listens on the port, measures the links to `targets` (round trips, then `bytes`), and
// serves the `incoming` pods that measure their link to this one, until they are done or the
// budget ends. A link not done by then is reported with its error. Throws LaunchError
// (kSetupFailed) when the port cannot be bound.
std::vector<LinkResult> run_net_probe(const NetProbeOptions& options);

}  // namespace gj
