#include "job_view.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace gj {
namespace {

std::vector<int> parse_ranges(const std::string& text) {
  std::vector<int> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto comma = text.find(',', pos);
    const std::string part = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? text.size() : comma + 1;
    const auto dash = part.find('-');
    char* end = nullptr;
    const long a = std::strtol(part.c_str(), &end, 10);
    if (end == part.c_str() || a < 0) continue;
    const long b = dash == std::string::npos ? a : std::strtol(part.c_str() + dash + 1, nullptr, 10);
    for (long r = a; r <= b && out.size() < (1u << 20); ++r) out.push_back(static_cast<int>(r));
  }
  return out;
}

std::string seconds_text(std::int64_t ms) {
  char buf[32];
  if (ms < 10000) std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000.0);
  else std::snprintf(buf, sizeof buf, "%lld s", static_cast<long long>(ms / 1000));
  return buf;
}

std::string who_text(const RankIdentity& w) {
  std::string out = "rank " + std::to_string(w.rank) + " (";
  if (w.local_rank >= 0) out += "local rank " + std::to_string(w.local_rank) + ", ";
  return out + "pod " + w.pod + ")";
}

std::string rank_list(const std::vector<int>& ranks, std::size_t most = 8) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size() && i < most; ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > most) out += " and " + std::to_string(ranks.size() - most) + " more";
  return out;
}

std::string percent(double share) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", share * 100);
  return buf;
}

}  // namespace

std::string bytes_text(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%.0f B", b);
  else std::snprintf(buf, sizeof buf, "%.1f %s", b, units[u]);
  return buf;
}

std::string process_state_text(char s) {
  switch (s) {
    case 'R': return "running (R)";
    case 'S': return "sleeping (S)";
    case 'D': return "uninterruptible (D: waiting for I/O or the kernel)";
    case 'T': return "stopped (T: SIGSTOP or SIGTSTP)";
    case 't': return "stopped by a debugger (t)";
    case 'Z': return "exited, not yet reaped (Z)";
    case 'I': return "idle (I)";
    default: return s == 0 || s == '?' ? std::string("unknown") : std::string(1, s);
  }
}

void JobView::on_line(int conn, const RankIdentity& who, const MonitorLine& l, std::int64_t now) {
  Rank& r = ranks_[conn];
  r.who = who;
  if (l.verb == "set") {
    const auto id = l.get("id");
    if (id && sets_.count(*id) == 0) sets_[*id].members = parse_ranges(l.get("ranks").value_or(""));
  } else if (l.verb == "prog") {
    const auto id = l.get("set");
    if (!id) return;
    SetProgress& p = r.sets[*id];
    const auto in = static_cast<std::uint64_t>(l.number("in").value_or(0));
    const auto done = static_cast<std::uint64_t>(l.number("done").value_or(0));
    p.in = in;
    p.done = done;
    p.call = l.get("call").value_or("-");
    p.done_call = l.get("dcall").value_or("-");
    p.changed_ms = now - l.number("age").value_or(0);
    p.bytes = static_cast<std::uint64_t>(l.number("bytes").value_or(0));
    p.in_ms = l.number("inms").value_or(0);
    if (r.first_ms < 0) r.first_ms = now;
    r.last_ms = now;
  } else if (l.verb == "ping") {
    if (const auto s = l.get("state"); s && !s->empty()) r.state = (*s)[0];
    r.cpu_ms = l.number("cpu").value_or(r.cpu_ms);
    r.rss = l.number("rss").value_or(r.rss);
    r.hwm = std::max(r.hwm, l.number("hwm").value_or(0));
    r.net_rx = l.number("rx").value_or(r.net_rx);
    r.net_tx = l.number("tx").value_or(r.net_tx);
    r.throttled_us = l.number("thr").value_or(r.throttled_us);
    if (const auto psi = l.get("psi")) r.memory_pressure = std::atof(psi->c_str());
    r.gpu_memory = l.number("gmem").value_or(-1);  // absent: the last sample found none
    r.gpu_utilization = r.gpu_memory < 0 ? 0 : std::atof(l.get("gutil").value_or("0").c_str());
  } else if (l.verb == "diag") {
    if (!r.diag) r.diag = Diagnosis{now, false, {}};
    r.diag->lines.clear();
    const auto state = l.get("state").value_or("?");
    std::string line = "process " + process_state_text(state.empty() ? '?' : state[0]);
    const auto cpu = l.get("cpu").value_or("?");
    line += ", CPU " + (cpu == "?" ? std::string("unknown") : cpu + "%") + " over the last 5 s";
    const auto wchan = l.get("wchan").value_or("-");
    if (wchan != "-" && wchan != "0") line += ", kernel wait " + wchan;
    line += ", " + l.get("threads").value_or("?") + " thread(s)";
    r.diag->lines.push_back(line);
  } else if (l.verb == "stack") {
    if (r.diag && !r.diag->done) {
      if (r.diag->lines.size() == 1) r.diag->lines.push_back("Python stack, every thread (most recent call first):");
      r.diag->lines.push_back("| " + l.reason.value_or(""));
    }
  } else if (l.verb == "diagend") {
    if (r.diag) {
      if (l.reason && !l.reason->empty()) r.diag->lines.push_back(*l.reason);
      r.diag->done = true;
    }
  }
}

void JobView::on_gone(int conn) {
  auto it = ranks_.find(conn);
  if (it != ranks_.end()) it->second.gone = true;
}

std::string JobView::describe_set(const std::string& id) const {
  const auto it = sets_.find(id);
  const std::size_t n = it == sets_.end() ? 0 : it->second.members.size();
  std::size_t world = 0;
  for (const auto& [conn, r] : ranks_) world = std::max(world, static_cast<std::size_t>(r.who.rank + 1));
  if (n > 0 && it->second.members.front() == 0 && it->second.members.back() + 1 == static_cast<int>(n) && n >= world)
    return "the world set (" + std::to_string(n) + " ranks)";
  return "the process set of ranks " + rank_list(it == sets_.end() ? std::vector<int>{} : it->second.members) + " (" +
         std::to_string(n) + " ranks)";
}

std::vector<std::string> JobView::diagnosis_lines(int conn) const {
  const auto it = ranks_.find(conn);
  if (it == ranks_.end() || !it->second.diag) return {"no answer from its wrapper"};
  if (it->second.diag->lines.empty()) return {"no answer from its wrapper within " + seconds_text(options_.diag_wait_ms)};
  return it->second.diag->lines;
}

void JobView::hang_check(const std::string& id, const SetInfo& set, std::int64_t now, ViewStep& step) {
  std::map<int, int> conn_of;  // world rank -> connection
  for (const auto& [conn, r] : ranks_) conn_of[r.who.rank] = conn;
  std::uint64_t top = 0;
  for (int m : set.members) {
    const auto c = conn_of.find(m);
    if (c == conn_of.end()) continue;
    const auto p = ranks_[c->second].sets.find(id);
    if (p != ranks_[c->second].sets.end()) top = std::max(top, p->second.in);
  }
  std::vector<int> waiters, missing_ranks, missing;  // world ranks, world ranks, connections
  std::int64_t since = now;
  std::string call;
  for (int m : set.members) {
    const auto c = conn_of.find(m);
    const Rank* r = c == conn_of.end() ? nullptr : &ranks_[c->second];
    const SetProgress* p = nullptr;
    if (r != nullptr) {
      const auto it = r->sets.find(id);
      if (it != r->sets.end()) p = &it->second;
    }
    if (r != nullptr && r->gone) return;  // a rank left: the failure path speaks, not this
    if (p != nullptr && p->in == top && p->done < top) {
      waiters.push_back(m);
      since = std::min(since, p->changed_ms);
      call = p->call;
    } else if (p == nullptr || p->in < top) {
      missing_ranks.push_back(m);
      if (r != nullptr) missing.push_back(c->second);
    }
  }
  const std::int64_t threshold = options_.stall_ms > 0 ? options_.stall_ms : options_.hang_timeout_ms;
  const std::int64_t waited = now - since;
  if (top == 0 || waiters.empty() || missing_ranks.empty() || threshold <= 0 || waited < threshold) {
    episodes_.erase(id);
    return;
  }
  hang_waited_ms_ = std::max(hang_waited_ms_, waited);
  hang_ranks_ += missing_ranks.size();
  Episode& e = episodes_[id];
  if (e.seq != top) e = Episode{top, 0, {}, false, false};
  const bool due = !e.told && now >= e.next_ms;
  if (due && e.missing.empty()) {  // a new round: ask the wrappers first
    e.missing = missing;
    for (int c : missing) {
      ranks_[c].diag = Diagnosis{now, false, {}};
      step.diagnose.push_back(c);
    }
  }
  const bool answered = std::all_of(e.missing.begin(), e.missing.end(), [&](int c) {
    const Rank& r = ranks_[c];
    return r.diag && (r.diag->done || now - r.diag->asked_ms >= options_.diag_wait_ms);
  });
  if (!answered) return;
  const std::string where = call + " #" + std::to_string(top) + " of " + describe_set(id);
  const bool timeout = options_.hang_timeout_ms > 0 && waited >= options_.hang_timeout_ms;
  if (due || (timeout && !e.fired)) {
    std::vector<std::string>& out = step.warn_lines;
    out.push_back("hang: rank(s) " + rank_list(waiters) + " have waited " + seconds_text(waited) + " in " + where +
                  " for rank(s) " + rank_list(missing_ranks) + ", which have not entered it");
    for (int c : e.missing) {
      const Rank& r = ranks_[c];
      const auto p = r.sets.find(id);
      std::string last = "nothing reported on this set yet (progress is reported once a second)";
      if (p != r.sets.end() && p->second.done > 0)
        last = p->second.done_call + " #" + std::to_string(p->second.done) + ", " +
               seconds_text(now - p->second.changed_ms) + " ago";
      out.push_back("hang: " + who_text(r.who) + " last completed " + last);
      for (const auto& line : diagnosis_lines(c)) out.push_back("hang: rank " + std::to_string(r.who.rank) + ": " + line);
    }
    if (missing.size() > e.missing.size())
      out.push_back("hang: " + std::to_string(missing.size() - e.missing.size()) + " more rank(s) not diagnosed");
    if (!timeout && options_.hang_timeout_ms > 0)
      out.push_back("hang: the job ends as a failure of these rank(s) if the wait reaches " +
                    seconds_text(options_.hang_timeout_ms) + " (--hang-timeout/GJ_HANG_TIMEOUT)");
    e.told = true;
    e.next_ms = now + std::max(options_.repeat_ms, options_.stall_ms);
  }
  if (timeout && !e.fired) {
    e.fired = true;
    for (int c : e.missing) {
      HungRank h;
      h.conn = c;
      h.what = "hung: never entered " + where + ", where rank(s) " + rank_list(waiters) + " waited " +
               seconds_text(waited) + " (--hang-timeout/GJ_HANG_TIMEOUT " + seconds_text(options_.hang_timeout_ms) + ")";
      h.stack = diagnosis_lines(c);
      step.hung.push_back(std::move(h));
    }
  }
  // The next round asks again once its time comes.
  if (e.told && now >= e.next_ms) {
    e.told = false;
    e.missing.clear();
  }
}

JobView::Totals JobView::totals(const Rank& r) const {
  Totals t;
  for (const auto& [id, p] : r.sets) {
    t.collectives += p.done;
    t.bytes += p.bytes;
    t.in_ms += p.in_ms;
  }
  return t;
}

void JobView::status_check(std::int64_t now, ViewStep& step) {
  if (options_.status_ms <= 0) return;
  if (next_status_ms_ < 0) {
    next_status_ms_ = now + options_.status_ms;
    return;
  }
  if (now < next_status_ms_) return;
  const double span_s = static_cast<double>(now - (next_status_ms_ - options_.status_ms)) / 1000.0;
  next_status_ms_ = now + options_.status_ms;
  std::size_t running = 0;
  double max_rate = 0, bytes = 0;
  const Rank* slowest = nullptr;
  double slowest_share = 2, others_share = 0;
  const Rank* largest = nullptr;
  std::size_t reporting = 0;
  for (const auto& [conn, r] : ranks_) {
    if (r.gone) continue;
    ++running;
    if (largest == nullptr || r.rss > largest->rss) largest = &r;
    const Totals t = totals(r);
    const Totals base = status_base_[conn];
    status_base_[conn] = t;
    if (r.sets.empty()) continue;
    ++reporting;
    max_rate = std::max(max_rate, static_cast<double>(t.collectives - base.collectives) / span_s);
    bytes += static_cast<double>(t.bytes - base.bytes);
    const double share = static_cast<double>(t.in_ms - base.in_ms) / 1000.0 / span_s;
    others_share += share;
    if (share < slowest_share) {
      slowest_share = share;
      slowest = &r;
    }
  }
  std::string line = "status: " + std::to_string(running) + " rank(s) running";
  if (reporting > 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, ", %.1f collectives/s, ", max_rate);
    line += buf + bytes_text(bytes / span_s) + "/s";
    if (reporting > 1 && max_rate > 0 && slowest != nullptr) {
      others_share = (others_share - slowest_share) / static_cast<double>(reporting - 1);
      line += ", slowest rank " + std::to_string(slowest->who.rank) + " (pod " + slowest->who.pod + ": " +
              percent(std::max(0.0, slowest_share)) + " of its time in collectives, the others " +
              percent(std::max(0.0, others_share)) + ")";
    }
  } else {
    line += ", no collectives reported yet";
  }
  if (largest != nullptr && largest->rss > 0)
    line += ", largest RSS rank " + std::to_string(largest->who.rank) + " (pod " + largest->who.pod + ") " +
            bytes_text(static_cast<double>(largest->rss));
  step.info_lines.push_back(line);
}

void JobView::straggler_check(std::int64_t now, ViewStep& step) {
  if (options_.straggler_window_ms <= 0) return;
  if (next_straggler_ms_ >= 0 && now < next_straggler_ms_) return;
  const bool first = next_straggler_ms_ < 0;
  const double window = static_cast<double>(options_.straggler_window_ms);
  next_straggler_ms_ = now + options_.straggler_window_ms;
  struct Share {
    int conn;
    double in, cpu, throttled;
  };
  std::vector<Share> shares;
  std::uint64_t collectives = 0;
  for (const auto& [conn, r] : ranks_) {
    if (r.gone || r.sets.empty()) continue;
    const Totals t = totals(r);
    Sample now_sample{t.in_ms, r.cpu_ms, r.throttled_us, t.collectives};
    const auto base = straggler_base_.find(conn);
    if (!first && base != straggler_base_.end()) {
      const Sample& b = base->second;
      shares.push_back({conn, static_cast<double>(now_sample.in_ms - b.in_ms) / window,
                        static_cast<double>(now_sample.cpu_ms - b.cpu_ms) / window,
                        static_cast<double>(now_sample.throttled_us - b.throttled_us) / 1000.0 / window});
      collectives = std::max(collectives, now_sample.collectives - b.collectives);
    }
    straggler_base_[conn] = now_sample;
  }
  if (first) return;
  int slow = -1;
  double others = 0, mine = 0;
  if (shares.size() >= 2 && collectives >= 3) {  // a window with collectives going on
    std::sort(shares.begin(), shares.end(), [](const Share& a, const Share& b) { return a.in < b.in; });
    std::vector<double> rest;
    for (std::size_t i = 1; i < shares.size(); ++i) rest.push_back(shares[i].in);
    others = rest[rest.size() / 2];  // their median
    mine = shares[0].in;
    if (others - mine > options_.straggler_share) slow = shares[0].conn;
  }
  flagged_.push_back(slow);
  const std::size_t keep = static_cast<std::size_t>(options_.straggler_windows) + 1;
  if (flagged_.size() > keep) flagged_.erase(flagged_.begin());
  if (slow >= 0 && slow != straggler_ &&
      std::count(flagged_.begin(), flagged_.end(), slow) >= options_.straggler_windows) {
    straggler_ = slow;
    const Rank& r = ranks_[slow];
    std::string cause;
    const Share& s = shares[0];
    if (s.throttled > 0.10)
      cause = "its pod's cgroup throttled its CPU " + percent(s.throttled) + " of the time (cpu.stat throttled_usec)";
    else if (r.memory_pressure > 10)
      cause = "memory pressure in its pod (memory.pressure some avg10=" + std::to_string(static_cast<int>(r.memory_pressure)) + "%)";
    else
      cause = "its own work between collectives takes longer (" + percent(1.0 - mine) + " of its time outside collectives, " +
              percent(s.cpu) + " CPU; no CPU throttling or memory pressure seen)";
    step.warn_lines.push_back("straggler: rank " + std::to_string(r.who.rank) + " (pod " + r.who.pod +
                              ") arrives last at collectives: the other ranks spend " + percent(others) +
                              " of their time in collectives waiting, it " + percent(mine) + " (in " +
                              std::to_string(options_.straggler_windows) + " of the last " + std::to_string(keep) +
                              " windows of " + seconds_text(options_.straggler_window_ms) + "); cause: " + cause);
  }
  if (straggler_ >= 0 && std::count(flagged_.begin(), flagged_.end(), straggler_) == 0) straggler_ = -1;  // episode over
}

ViewStep JobView::tick(std::int64_t now) {
  ViewStep step;
  hang_waited_ms_ = 0;
  hang_ranks_ = 0;
  for (const auto& [id, set] : sets_) hang_check(id, set, now, step);
  status_check(now, step);
  straggler_check(now, step);
  return step;
}

std::vector<std::string> JobView::end_lines() const {
  std::vector<const Rank*> by_rank;
  for (const auto& [conn, r] : ranks_) by_rank.push_back(&r);
  std::sort(by_rank.begin(), by_rank.end(), [](const Rank* a, const Rank* b) { return a->who.rank < b->who.rank; });
  std::vector<std::string> out;
  for (const Rank* r : by_rank) {
    if (r->first_ms < 0 && r->hwm == 0) continue;
    const Totals t = totals(*r);
    std::string line = "rank " + std::to_string(r->who.rank) + " (pod " + r->who.pod + "): " +
                       std::to_string(t.collectives) + " collectives, " + bytes_text(static_cast<double>(t.bytes));
    if (r->last_ms > r->first_ms && r->first_ms >= 0) {
      const double span = static_cast<double>(r->last_ms - r->first_ms) + 1000.0;  // reports come each second
      line += ", " + percent(std::min(1.0, static_cast<double>(t.in_ms) / span)) + " of its time in collectives";
    }
    if (r->hwm > 0) line += ", peak RSS " + bytes_text(static_cast<double>(r->hwm));
    out.push_back(line);
  }
  return out;
}

}  // namespace gj

namespace gj {
namespace {

// A label value as the text format wants it: backslash, quote and newline escaped.
std::string label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string number_text(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

std::string JobView::prometheus_text(bool failing) const {
  struct Family {
    const char* name;
    const char* type;
    const char* help;
    std::string samples;
  };
  std::vector<Family> rank_families = {
      {"gj_collectives_total", "counter", "collectives the rank completed, every set", {}},
      {"gj_collective_bytes_total", "counter", "bytes the rank passed into collectives", {}},
      {"gj_collective_seconds_total", "counter", "seconds the rank spent in collectives (entered to completed)", {}},
      {"gj_collective_wait_seconds_total", "counter",
       "seconds in collectives beyond the rank that spent the least there: its waiting for peers", {}},
      {"gj_rank_rss_bytes", "gauge", "resident memory of the rank's program", {}},
      {"gj_rank_cpu_seconds_total", "counter", "CPU time (user + system) of the rank's program", {}},
  };
  std::int64_t least_in_ms = -1;
  for (const auto& [conn, r] : ranks_)
    if (!r.sets.empty()) least_in_ms = least_in_ms < 0 ? totals(r).in_ms : std::min(least_in_ms, totals(r).in_ms);
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> pods;  // pod -> (rx, tx)
  std::string gpu_memory, gpu_utilization;  // only ranks with a GPU sample
  std::size_t running = 0;
  for (const auto& [conn, r] : ranks_) {
    if (!r.gone) ++running;
    if (r.net_rx >= 0) pods[r.who.pod] = {r.net_rx, r.net_tx};
    const std::string labels = "{rank=\"" + std::to_string(r.who.rank) + "\",pod=\"" + label_value(r.who.pod) +
                               "\",local_rank=\"" + std::to_string(r.who.local_rank) + "\"} ";
    const Totals t = totals(r);
    const double values[] = {static_cast<double>(t.collectives), static_cast<double>(t.bytes), static_cast<double>(t.in_ms) / 1000.0,
                             least_in_ms < 0 ? 0.0 : static_cast<double>(t.in_ms - std::min(t.in_ms, least_in_ms)) / 1000.0,
                             static_cast<double>(r.rss), static_cast<double>(r.cpu_ms) / 1000.0};
    for (std::size_t i = 0; i < rank_families.size(); ++i)
      rank_families[i].samples += std::string(rank_families[i].name) + labels + number_text(values[i]) + "\n";
    if (r.gpu_memory >= 0) {
      gpu_memory += "gj_rank_gpu_memory_bytes" + labels + std::to_string(r.gpu_memory) + "\n";
      gpu_utilization += "gj_rank_gpu_utilization_ratio" + labels + number_text(r.gpu_utilization) + "\n";
    }
  }
  std::string out;
  const auto family = [&out](const char* name, const char* type, const char* help, const std::string& samples) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + samples;
  };
  for (const auto& f : rank_families) family(f.name, f.type, f.help, f.samples);
  if (!gpu_memory.empty()) {
    family("gj_rank_gpu_memory_bytes", "gauge", "device memory NVML lists for the rank's program, summed over its GPUs",
           gpu_memory);
    family("gj_rank_gpu_utilization_ratio", "gauge",
           "mean utilization (0-1) of the GPUs the rank's program is on, NVML's last sample period", gpu_utilization);
  }
  std::string rx, tx;
  for (const auto& [pod, bytes] : pods) {
    rx += "gj_pod_network_receive_bytes_total{pod=\"" + label_value(pod) + "\"} " + std::to_string(bytes.first) + "\n";
    tx += "gj_pod_network_transmit_bytes_total{pod=\"" + label_value(pod) + "\"} " + std::to_string(bytes.second) + "\n";
  }
  family("gj_pod_network_receive_bytes_total", "counter", "bytes the pod received (interfaces other than loopback)", rx);
  family("gj_pod_network_transmit_bytes_total", "counter", "bytes the pod sent (interfaces other than loopback)", tx);
  family("gj_job_ranks", "gauge", "ranks whose wrapper reported and that are still running",
         "gj_job_ranks " + std::to_string(running) + "\n");
  std::string state;
  for (const char* s : {"running", "failing"})
    state += std::string("gj_job_state{state=\"") + s + "\"} " + ((failing == (s[0] == 'f')) ? "1" : "0") + "\n";
  family("gj_job_state", "gauge", "1 for the job's current state", state);
  family("gj_job_hang_ranks", "gauge", "ranks that have not entered a collective others waited in past the stall time",
         "gj_job_hang_ranks " + std::to_string(hang_ranks_) + "\n");
  {
    const auto it = straggler_ >= 0 ? ranks_.find(straggler_) : ranks_.end();
    family("gj_job_straggler_rank", "gauge", "the rank named as a straggler in the current episode, -1 for none",
           "gj_job_straggler_rank " + std::to_string(it == ranks_.end() ? -1 : it->second.who.rank) + "\n");
  }
  family("gj_job_hang_seconds", "gauge", "the longest current wait in one collective past the stall time",
         "gj_job_hang_seconds " + number_text(static_cast<double>(hang_waited_ms_) / 1000.0) + "\n");
  return out;
}

}  // namespace gj
