#include "text.h"
#include "resolver.h"

#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "dns_message.h"
#include "host_name.h"

namespace gj {
namespace {

// dev:inode:size:mtime, so an edited or replaced file (Kubernetes updates /etc/hosts in place,
// tests rename over it) is re-read, and an unchanged one is not.
std::string file_stamp(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return "missing";
  std::ostringstream s;
  s << st.st_dev << ':' << st.st_ino << ':' << st.st_size << ':' << st.st_mtim.tv_sec << '.' << st.st_mtim.tv_nsec;
  return s.str();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string server_list(const std::vector<IpAddress>& servers) {
  std::string out;
  for (const auto& s : servers) out += (out.empty() ? "" : ", ") + s.to_string();
  return out;
}

// Bursts of thousands of queries: a larger receive buffer keeps the replies (best effort;
// SO_RCVBUFFORCE works as root beyond net.core.rmem_max).
void widen_receive_buffer(int fd) {
  int bytes = 4 << 20;
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0)
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

}  // namespace

AsyncResolver::AsyncResolver(int epoll_fd, std::uint64_t epoll_tag, ResolverConfig config)
    : epoll_fd_(epoll_fd), tag_(epoll_tag), config_(std::move(config)) {
  // Random query ids make off-path spoofing of answers harder.
  std::uint16_t seed = 0;
  if (::getrandom(&seed, sizeof seed, GRND_NONBLOCK) != sizeof seed) seed = static_cast<std::uint16_t>(::getpid());
  next_id_ = seed;
}

AsyncResolver::~AsyncResolver() {
  if (fd4_ >= 0) ::close(fd4_);
  if (fd6_ >= 0) ::close(fd6_);
}

void AsyncResolver::refresh_files(Clock::time_point now) {
  if (now - last_refresh_ < std::chrono::milliseconds(20) && last_refresh_ != Clock::time_point{}) return;
  last_refresh_ = now;
  if (auto s = file_stamp(config_.hosts_file); s != hosts_stamp_) {
    hosts_stamp_ = s;
    hosts_ = index_hosts(parse_hosts(read_file(config_.hosts_file)));
  }
  if (auto s = file_stamp(config_.resolv_conf); s != resolv_stamp_) {
    resolv_stamp_ = s;
    resolv_ = parse_resolv_conf(read_file(config_.resolv_conf));
  }
}

int AsyncResolver::socket_for(int family) {
  int& fd = family == AF_INET ? fd4_ : fd6_;
  if (fd >= 0) return fd;
  fd = ::socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  widen_receive_buffer(fd);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = tag_;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    ::close(fd);
    fd = -1;
  }
  return fd;
}

std::uint16_t AsyncResolver::allocate_id(std::size_t token) {
  while (ids_.count(++next_id_) != 0) {
  }
  ids_[next_id_] = token;
  return next_id_;
}

void AsyncResolver::start(std::size_t token, const std::string& name, Clock::time_point now) {
  cancel(token);
  if (auto ip = parse_ip(name)) {
    finish(token, {*ip}, "");
    return;
  }
  if (!is_valid_host_name(name)) {
    finish(token, {}, "not a valid host name");
    return;
  }
  refresh_files(now);
  if (auto addrs = lookup_hosts(hosts_, name); !addrs.empty()) {
    finish(token, addrs, "");
    return;
  }
  if (lookups_.size() >= config_.max_parallel_lookups) {
    waiting_.push_back({token, name});
    return;
  }
  Lookup& l = lookups_[token];
  l.names = query_names(name, resolv_);
  l.servers = resolv_.nameservers;
  l.attempts = static_cast<std::size_t>(resolv_.attempts);
  send_current(token, l, now);
}

void AsyncResolver::cancel(std::size_t token) {
  waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), [&](const auto& w) { return w.first == token; }),
                 waiting_.end());
  auto it = lookups_.find(token);
  if (it == lookups_.end()) return;
  ids_.erase(it->second.id_a);
  ids_.erase(it->second.id_aaaa);
  deadlines_.erase({it->second.deadline, token});
  lookups_.erase(it);
}

void AsyncResolver::send_current(std::size_t token, Lookup& l, Clock::time_point now) {
  ids_.erase(l.id_a);
  ids_.erase(l.id_aaaa);
  deadlines_.erase({l.deadline, token});
  l.a_done = l.aaaa_done = false;
  const IpAddress& server = l.servers[l.server_index];
  const std::string& qname = l.names[l.name_index];
  l.id_a = allocate_id(token);
  l.id_aaaa = allocate_id(token);
  l.deadline = now + config_.query_timeout;
  deadlines_.insert({l.deadline, token});
  sockaddr_storage to{};
  socklen_t to_len = server.to_sockaddr(config_.dns_port, &to);
  int fd = socket_for(server.family);
  for (auto [id, type] : {std::pair{l.id_a, kDnsTypeA}, std::pair{l.id_aaaa, kDnsTypeAAAA}}) {
    auto q = encode_dns_query(id, qname, type);
    if (q.empty()) {
      advance(token, l, qname + ": cannot be encoded as a DNS name", Failure::NoSuchName, now);
      return;
    }
    if (fd < 0 || ::sendto(fd, q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&to), to_len) < 0) {
      advance(token, l, qname + ": sending to nameserver " + server.to_string() + " failed (" + std::strerror(errno) + ")",
              Failure::ServerFailed, now);
      return;
    }
  }
}

void AsyncResolver::advance(std::size_t token, Lookup& l, const std::string& outcome, Failure kind,
                            Clock::time_point now) {
  // As glibc's res_nsearch: a name that does not exist moves on to the next search name; a
  // failing server moves on to the next server, then to the next name; a timeout moves on to
  // the next server, then to another round over all servers (resolv.conf `attempts`), and then
  // gives up on the whole lookup (a silent DNS is not evidence that a name does not exist).
  if (kind != Failure::NoSuchName && l.server_index + 1 < l.servers.size()) {
    ++l.server_index;
    send_current(token, l, now);
    return;
  }
  l.server_index = 0;
  if (kind == Failure::TimedOut) {
    if (++l.attempt < l.attempts) {
      send_current(token, l, now);
      return;
    }
    l.outcomes.push_back(outcome);
    finish(token, {}, failure_reason(l));
    return;
  }
  if (kind == Failure::NoSuchName && outcome.empty()) l.missing.push_back(l.names[l.name_index]);
  else l.outcomes.push_back(outcome);
  l.attempt = 0;
  if (++l.name_index >= l.names.size()) {
    finish(token, {}, failure_reason(l));
    return;
  }
  send_current(token, l, now);
}

std::string AsyncResolver::failure_reason(const Lookup& l) const {
  std::vector<std::string> parts;
  if (!l.missing.empty()) parts.push_back("no such name in DNS (" + join(l.missing, ", ") + ")");
  parts.insert(parts.end(), l.outcomes.begin(), l.outcomes.end());
  return "not in " + config_.hosts_file + "; " + join(parts, "; ");
}

std::string AsyncResolver::in_flight_note(std::size_t token) const {
  const auto it = lookups_.find(token);
  if (it == lookups_.end()) {
    for (const auto& w : waiting_)
      if (w.first == token) return "not in " + config_.hosts_file + "; waiting for a DNS lookup slot";
    return "";
  }
  const Lookup& l = it->second;
  std::string out = failure_reason(l);
  if (l.name_index < l.names.size() && l.server_index < l.servers.size())
    out += std::string(out.back() == ' ' ? "" : "; ") + "no answer yet from " + l.servers[l.server_index].to_string() +
           " for " + l.names[l.name_index];
  return out;
}

void AsyncResolver::finish(std::size_t token, std::vector<IpAddress> addrs, std::string reason) {
  cancel(token);
  completed_.push_back({token, std::move(addrs), std::move(reason)});
  start_waiting_ = true;
}

void AsyncResolver::start_waiting(Clock::time_point now) {
  // Outside of finish(): finish() runs deep inside reply and timeout handling.
  start_waiting_ = false;
  while (!waiting_.empty() && lookups_.size() < config_.max_parallel_lookups) {
    auto [token, name] = waiting_.front();
    waiting_.pop_front();
    start(token, name, now);
  }
}

void AsyncResolver::on_readable(Clock::time_point now) {
  for (int fd : {fd4_, fd6_})
    if (fd >= 0) drain(fd, now);
  if (start_waiting_) start_waiting(now);
}

void AsyncResolver::drain(int fd, Clock::time_point now) {
  std::uint8_t buf[4096];
  for (;;) {
    sockaddr_storage from{};
    socklen_t from_len = sizeof from;
    ssize_t n = ::recvfrom(fd, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &from_len);
    if (n < 0) return;  // EAGAIN (drained) or an ICMP error we learn about by timeout anyway
    auto reply = parse_dns_reply(buf, static_cast<std::size_t>(n));
    if (!reply) continue;
    auto id_it = ids_.find(reply->id);
    if (id_it == ids_.end()) continue;  // late or foreign
    const std::size_t token = id_it->second;
    Lookup& l = lookups_.at(token);
    auto src = from_sockaddr(from);
    const std::string& qname = l.names[l.name_index];
    bool is_a = reply->id == l.id_a;
    if (!src || *src != l.servers[l.server_index] || port_of(from) != config_.dns_port || reply->question != qname ||
        reply->qtype != (is_a ? kDnsTypeA : kDnsTypeAAAA))
      continue;  // not the answer to our question: ignore (spoofing, stray packets)
    ids_.erase(id_it);
    const std::string server = l.servers[l.server_index].to_string();
    if (reply->rcode == kDnsRcodeNxDomain) {
      advance(token, l, "", Failure::NoSuchName, now);  // "" = plain NXDOMAIN, listed compactly
      continue;
    }
    if (reply->rcode != kDnsRcodeNoError) {
      advance(token, l, qname + ": nameserver " + server + " answered rcode " + std::to_string(reply->rcode),
              Failure::ServerFailed, now);
      continue;
    }
    for (const auto& ip : reply->addresses) (ip.family == AF_INET ? l.v4 : l.v6).push_back(ip);
    (is_a ? l.a_done : l.aaaa_done) = true;
    // IPv4 first (what Kubernetes pod networks mostly are); IPv6 when that is all there is.
    if (!l.v4.empty() || (l.a_done && l.aaaa_done)) {
      if (l.v4.empty() && l.v6.empty()) {
        advance(token, l, qname + ": no address records", Failure::NoSuchName, now);
        continue;
      }
      std::vector<IpAddress> all = l.v4;
      all.insert(all.end(), l.v6.begin(), l.v6.end());
      finish(token, all, "");
    }
  }
}

void AsyncResolver::on_tick(Clock::time_point now) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    const std::size_t token = deadlines_.begin()->second;
    Lookup& l = lookups_.at(token);
    if (!l.v6.empty()) {  // AAAA answered, A did not: use what we have
      finish(token, l.v6, "");
      continue;
    }
    advance(token, l,
            l.names[l.name_index] + ": no answer from nameserver(s) " + server_list(l.servers) + " within " +
                std::to_string(config_.query_timeout.count()) + " ms (" + std::to_string(l.attempts) + " attempts)",
            Failure::TimedOut, now);
  }
  if (start_waiting_) start_waiting(now);
}

std::optional<AsyncResolver::Clock::time_point> AsyncResolver::next_deadline() const {
  if (deadlines_.empty()) return std::nullopt;
  return deadlines_.begin()->first;
}

std::vector<Resolution> AsyncResolver::take_completed() {
  std::vector<Resolution> out;
  out.swap(completed_);
  return out;
}

}  // namespace gj
