// The master's Prometheus endpoint (--metrics-port/GJ_METRICS_PORT, docs/agent.md "Metrics"): a
// thread that answers `GET /metrics` with the text a callback renders (the job monitor's series,
// job_view.h) in Prometheus' text format 0.0.4, and 404 to anything else. One request per
// connection, read with a 2 s bound, so a stuck client cannot hold the job.
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace gj {

class MetricsServer {
 public:
  // Listens on every address at `port`; throws LaunchError (kInternal) naming the call that
  // failed (the port taken: "bind ... Address already in use").
  MetricsServer(int port, std::function<std::string()> render);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;
  int port() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace gj
