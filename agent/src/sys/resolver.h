// A non-blocking stub resolver for the readiness gate: /etc/hosts first, then DNS A/AAAA over UDP
// to the nameservers of /etc/resolv.conf with its search list and ndots. It lives inside the
// caller's epoll loop: it registers its UDP sockets there and is driven by on_readable/on_tick.
// (glibc's getaddrinfo cannot be used: the agent is a static binary without NSS modules.)
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <utility>
#include <optional>
#include <string>
#include <vector>

#include "ip_address.h"
#include "resolver_files.h"

namespace gj {

struct ResolverConfig {
  std::string hosts_file = "/etc/hosts";
  std::string resolv_conf = "/etc/resolv.conf";
  int dns_port = 53;  // tests point this at a fake server
  std::chrono::milliseconds query_timeout{1000};  // per nameserver, per name, per attempt
  std::size_t max_parallel_lookups = 256;         // more wait their turn (bursts overflow UDP buffers)
};

struct Resolution {
  std::size_t token = 0;
  std::vector<IpAddress> addresses;  // empty: failed, see reason
  std::string reason;                // why it failed (no values beyond names and servers)
};

class AsyncResolver {
 public:
  using Clock = std::chrono::steady_clock;

  // `epoll_fd` gets the resolver's sockets with epoll data `epoll_tag` (the caller routes
  // events carrying that tag to on_readable).
  AsyncResolver(int epoll_fd, std::uint64_t epoll_tag, ResolverConfig config);
  ~AsyncResolver();
  AsyncResolver(const AsyncResolver&) = delete;
  AsyncResolver& operator=(const AsyncResolver&) = delete;

  // Starts resolving `name` for `token` (one lookup per token at a time). Literal addresses and
  // /etc/hosts hits complete at once (see take_completed).
  void start(std::size_t token, const std::string& name, Clock::time_point now);
  void cancel(std::size_t token);
  void on_readable(Clock::time_point now);
  void on_tick(Clock::time_point now);
  std::optional<Clock::time_point> next_deadline() const;
  std::vector<Resolution> take_completed();
  // What an unfinished lookup for `token` has seen so far ("not in /etc/hosts; no answer yet
  // from 10.0.0.10 for x.job"), for a deadline that falls inside it; "" when there is none.
  std::string in_flight_note(std::size_t token) const;

 private:
  struct Lookup {
    std::vector<std::string> names;  // query_names()
    std::vector<IpAddress> servers;   // resolv.conf's nameservers when the lookup started
    std::size_t name_index = 0;
    std::size_t server_index = 0;
    std::size_t attempt = 0, attempts = 2;  // rounds over all servers on timeouts
    std::uint16_t id_a = 0, id_aaaa = 0;
    bool a_done = false, aaaa_done = false;
    bool server_failed = false;
    std::vector<IpAddress> v4, v6;
    Clock::time_point deadline;
    std::vector<std::string> missing;   // names answered with NXDOMAIN
    std::vector<std::string> outcomes;  // other failures, for the failure reason
  };

  void refresh_files(Clock::time_point now);
  void send_current(std::size_t token, Lookup& l, Clock::time_point now);
  enum class Failure { NoSuchName, ServerFailed, TimedOut };
  void advance(std::size_t token, Lookup& l, const std::string& outcome, Failure kind, Clock::time_point now);
  void start_waiting(Clock::time_point now);
  std::string failure_reason(const Lookup& l) const;
  void finish(std::size_t token, std::vector<IpAddress> addrs, std::string reason);
  int socket_for(int family);
  std::uint16_t allocate_id(std::size_t token);
  void drain(int fd, Clock::time_point now);

  int epoll_fd_;
  std::uint64_t tag_;
  ResolverConfig config_;
  int fd4_ = -1, fd6_ = -1;
  std::uint16_t next_id_;
  std::map<std::uint16_t, std::size_t> ids_;  // in-flight query id -> token
  std::map<std::size_t, Lookup> lookups_;
  std::set<std::pair<Clock::time_point, std::size_t>> deadlines_;  // per in-flight lookup
  std::vector<Resolution> completed_;
  std::deque<std::pair<std::size_t, std::string>> waiting_;  // over max_parallel_lookups
  bool start_waiting_ = false;
  // Cached file contents, re-read when the file's identity or mtime changes.
  std::string hosts_stamp_, resolv_stamp_;
  HostsIndex hosts_;
  ResolvConf resolv_;
  Clock::time_point last_refresh_{};
};

}  // namespace gj
