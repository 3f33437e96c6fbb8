#include "net_check.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "text.h"

namespace gj {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

bool measured(const LinkResult& l) { return l.error.empty() && l.bytes_per_s > 0 && l.rtt_us >= 0; }

// Far below: a bandwidth under the median's 1/kSlowFactor, a round trip over kSlowFactor times the
// median and 1 ms more (sub-millisecond round trips jitter by more than their own size).
bool slow_rate(double v, double med, double factor) { return med > 0 && v >= 0 && v * factor < med; }
bool slow_rtt(double v, double med, double factor) { return med >= 0 && v > med * factor && v > med + 1000.0; }

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

std::vector<std::size_t> net_targets(std::size_t n, std::size_t self) {
  std::vector<std::size_t> out;
  if (n < 2 || self >= n) return out;
  const auto add = [&](std::size_t t) {
    if (t != self && std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  };
  add((self + 1) % n);
  add((self + n - 1) % n);
  if (n >= 4) add((self + n / 2) % n);
  return out;
}

std::size_t net_incoming(std::size_t n, std::size_t self) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto t = net_targets(n, i);
    count += static_cast<std::size_t>(std::count(t.begin(), t.end(), self));
  }
  return count;
}

std::string render_link(const LinkResult& r) {
  std::string line = "gj-net " + std::to_string(r.from) + " " + std::to_string(r.to) + " " + fmt("%.1f", r.rtt_us) + " " +
                     fmt("%.0f", r.bytes_per_s);
  if (!r.error.empty()) {
    std::string e = r.error;
    for (char& c : e)
      if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    line += " " + e;
  }
  return line;
}

std::optional<LinkResult> parse_link(const std::string& raw) {
  std::string line = raw;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (!starts_with(line, "gj-net ")) return std::nullopt;
  std::vector<std::string> f = split(line, ' ');
  if (f.size() < 5) return std::nullopt;
  LinkResult r;
  char* end = nullptr;
  const auto index = [&](const std::string& s, std::size_t& out) {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return false;
    out = std::stoul(s);
    return true;
  };
  const auto number = [&](const std::string& s, double& out) {
    out = std::strtod(s.c_str(), &end);
    return !s.empty() && *end == '\0';
  };
  if (!index(f[1], r.from) || !index(f[2], r.to) || !number(f[3], r.rtt_us) || !number(f[4], r.bytes_per_s))
    return std::nullopt;
  if (f.size() > 5) r.error = join(std::vector<std::string>(f.begin() + 5, f.end()), " ");
  return r;
}

std::string rate_text(double b) {
  if (b < 0) return "?";
  if (b >= 1e9) return fmt("%.2f GB/s", b / 1e9);
  if (b >= 1e6) return fmt("%.1f MB/s", b / 1e6);
  return fmt("%.0f kB/s", b / 1e3);
}

std::string rtt_text(double us) {
  if (us < 0) return "?";
  return us >= 1000 ? fmt("%.1f ms", us / 1000) : fmt("%.3f ms", us / 1000);
}

NetFinding analyse_links(const std::vector<std::string>& pods, const std::vector<LinkResult>& links) {
  NetFinding out;
  const std::size_t n = pods.size();
  std::vector<std::vector<double>> pod_rate(n), pod_rtt(n);
  std::vector<double> rates, rtts;
  const auto name = [&](std::size_t i) { return i < n ? pods[i] : "#" + std::to_string(i); };
  for (const auto& l : links) {
    if (!measured(l)) {
      out.errors.push_back("link " + name(l.from) + " -> " + name(l.to) + " not measured: " +
                           (l.error.empty() ? "no result" : l.error));
      continue;
    }
    if (l.from >= n || l.to >= n) continue;
    rates.push_back(l.bytes_per_s);
    rtts.push_back(l.rtt_us);
    for (const auto p : {l.from, l.to}) {
      pod_rate[p].push_back(l.bytes_per_s);
      pod_rtt[p].push_back(l.rtt_us);
    }
  }
  const double link_rate = median(rates), link_rtt = median(rtts);
  std::vector<double> pr, pt;
  for (std::size_t i = 0; i < n; ++i)
    if (!pod_rate[i].empty()) {
      pr.push_back(median(pod_rate[i]));
      pt.push_back(median(pod_rtt[i]));
    }
  const double pods_rate = median(pr), pods_rtt = median(pt);
  out.summary = "network check: " + std::to_string(rates.size()) + " link(s) between " + std::to_string(n) +
                " pod(s), median " + rate_text(link_rate) + ", round trip " + rtt_text(link_rtt);
  if (n < 3) {
    if (!rates.empty()) out.summary += " (below 3 pods there is no median to compare a pod with)";
    return out;
  }
  std::vector<bool> named(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    if (pod_rate[i].empty()) continue;
    const double r = median(pod_rate[i]), t = median(pod_rtt[i]);
    if (slow_rate(r, pods_rate, kSlowFactor) || slow_rtt(t, pods_rtt, kSlowFactor)) {
      named[i] = true;
      for (const auto& l : links)
        if (measured(l) && (l.from == i || l.to == i)) out.suspects.emplace_back(l.from, l.to);
      out.slow.push_back("pod " + pods[i] + " is far below the job's median on all its links: " + rate_text(r) +
                         " (median " + rate_text(pods_rate) + "), round trip " + rtt_text(t) + " (median " +
                         rtt_text(pods_rtt) + ")");
    }
  }
  for (const auto& l : links) {
    if (!measured(l) || l.from >= n || l.to >= n || named[l.from] || named[l.to]) continue;
    if (slow_rate(l.bytes_per_s, link_rate, kLinkSlowFactor) || slow_rtt(l.rtt_us, link_rtt, kLinkSlowFactor)) {
      out.suspects.emplace_back(l.from, l.to);
      out.slow.push_back("link " + pods[l.from] + " -> " + pods[l.to] + " is far below the job's median: " +
                         rate_text(l.bytes_per_s) + " (median " + rate_text(link_rate) + "), round trip " +
                         rtt_text(l.rtt_us) + " (median " + rtt_text(link_rtt) + ")");
    }
  }
  return out;
}

std::vector<LinkResult> merge_remeasured(std::vector<LinkResult> links, const std::vector<LinkResult>& again) {
  for (const auto& a : again) {
    if (!measured(a)) continue;
    for (auto& l : links)
      if (l.from == a.from && l.to == a.to) {
        if (!measured(l)) l = a;
        l.bytes_per_s = std::max(l.bytes_per_s, a.bytes_per_s);
        l.rtt_us = std::min(l.rtt_us, a.rtt_us);
      }
  }
  return links;
}

}  // namespace gj
