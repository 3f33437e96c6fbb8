#include "resolver_files.h"

#include <algorithm>
#include <cctype>

namespace gj {
namespace {

std::vector<std::string_view> split_ws(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

template <typename F>
void for_each_line(std::string_view text, F f) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    f(text.substr(start, end - start));
    start = end + 1;
  }
}

std::string normalize(std::string_view name) {
  std::string s(name);
  if (!s.empty() && s.back() == '.') s.pop_back();
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

int parse_small_int(std::string_view v, int fallback, int cap) {
  if (v.empty() || v.size() > 4) return fallback;
  int n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return fallback;
    n = n * 10 + (c - '0');
  }
  return std::min(n, cap);
}

}  // namespace

std::vector<HostsEntry> parse_hosts(std::string_view text) {
  std::vector<HostsEntry> out;
  for_each_line(text, [&](std::string_view line) {
    if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    auto words = split_ws(line);
    if (words.size() < 2) return;
    auto ip = parse_ip(words[0]);
    if (!ip) return;
    HostsEntry e{*ip, {}};
    for (std::size_t i = 1; i < words.size(); ++i) e.names.push_back(normalize(words[i]));
    out.push_back(std::move(e));
  });
  return out;
}

std::vector<IpAddress> lookup_hosts(const std::vector<HostsEntry>& entries, std::string_view name) {
  const std::string want = normalize(name);
  std::vector<IpAddress> out;
  for (const auto& e : entries) {
    if (std::find(e.names.begin(), e.names.end(), want) == e.names.end()) continue;
    if (std::find(out.begin(), out.end(), e.address) == out.end()) out.push_back(e.address);
  }
  return out;
}

HostsIndex index_hosts(const std::vector<HostsEntry>& entries) {
  HostsIndex index;
  for (const auto& e : entries)
    for (const auto& n : e.names) {
      auto& addrs = index[n];
      if (std::find(addrs.begin(), addrs.end(), e.address) == addrs.end()) addrs.push_back(e.address);
    }
  return index;
}

std::vector<IpAddress> lookup_hosts(const HostsIndex& index, std::string_view name) {
  auto it = index.find(normalize(name));
  return it == index.end() ? std::vector<IpAddress>{} : it->second;
}

ResolvConf parse_resolv_conf(std::string_view text) {
  ResolvConf conf;
  for_each_line(text, [&](std::string_view line) {
    if (auto hash = line.find_first_of("#;"); hash != std::string_view::npos) line = line.substr(0, hash);
    auto words = split_ws(line);
    if (words.empty()) return;
    if (words[0] == "nameserver" && words.size() >= 2) {
      if (auto ip = parse_ip(words[1]); ip && conf.nameservers.size() < 3) conf.nameservers.push_back(*ip);
    } else if ((words[0] == "search" || words[0] == "domain") && words.size() >= 2) {
      conf.search.clear();
      for (std::size_t i = 1; i < words.size(); ++i) {
        std::string d = normalize(words[i]);
        if (!d.empty() && conf.search.size() < 6) conf.search.push_back(d);
      }
    } else if (words[0] == "options") {
      for (std::size_t i = 1; i < words.size(); ++i) {
        auto w = words[i];
        if (w.rfind("ndots:", 0) == 0) conf.ndots = parse_small_int(w.substr(6), conf.ndots, 15);
        if (w.rfind("timeout:", 0) == 0) conf.timeout_s = std::max(1, parse_small_int(w.substr(8), conf.timeout_s, 30));
        if (w.rfind("attempts:", 0) == 0) conf.attempts = std::max(1, parse_small_int(w.substr(9), conf.attempts, 5));
      }
    }
  });
  if (conf.nameservers.empty()) conf.nameservers.push_back(*parse_ip("127.0.0.1"));
  return conf;
}

std::vector<std::string> query_names(std::string_view name, const ResolvConf& conf) {
  if (name.empty()) return {};
  if (name.back() == '.') return {normalize(name)};
  const std::string base = normalize(name);
  const auto dots = static_cast<int>(std::count(base.begin(), base.end(), '.'));
  std::vector<std::string> out;
  if (dots >= conf.ndots) out.push_back(base);
  for (const auto& d : conf.search) out.push_back(base + "." + d);
  if (dots < conf.ndots) out.push_back(base);
  return out;
}

}  // namespace gj
