#include "peer/progress.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "peer/monitor.h"

namespace gj::peer {
namespace {

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The live Progress objects; the reporter reads them under the mutex, and a destructor waits
// for it, so no report reads a destroyed one.
struct Registry {
  std::mutex m;
  std::vector<Progress*> live;
  std::vector<Progress*> announced;  // their `set` line was sent
  bool thread_started = false;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: the reporter thread may outlive main()
  return *r;
}

void report_loop() {
  Registry& r = registry();
  for (;;) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    std::string text;
    {
      std::lock_guard<std::mutex> lock(r.m);
      const std::int64_t now = steady_ns();
      for (Progress* p : r.live) {
        if (std::find(r.announced.begin(), r.announced.end(), p) == r.announced.end()) {
          r.announced.push_back(p);
          text += p->set_line() + "\n";
        }
        text += p->prog_line(now) + "\n";
      }
    }
    if (!text.empty()) send_text(text);
  }
}

}  // namespace

std::string rank_ranges(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(ranks[i]);
    if (j > i) out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

std::string set_id(const std::vector<int>& ranks, int nth) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the members
  for (int r : ranks) {
    h ^= static_cast<std::uint64_t>(r) + 1;
    h *= 1099511628211ull;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x.%d", static_cast<unsigned>(h ^ (h >> 32)), nth);
  return buf;
}

Progress::Progress(std::vector<int> members, int nth) : members_(std::move(members)), id_(set_id(members_, nth)) {
  changed_ns_.store(steady_ns(), std::memory_order_relaxed);
  if (!attached()) return;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.m);
  r.live.push_back(this);
  if (!r.thread_started) {
    r.thread_started = true;
    std::thread(report_loop).detach();
  }
}

Progress::~Progress() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.m);
  // Its last state, so that the master's end-of-job lines count every collective.
  if (std::find(r.announced.begin(), r.announced.end(), this) != r.announced.end()) send_text(prog_line(steady_ns()) + "\n");
  r.live.erase(std::remove(r.live.begin(), r.live.end(), this), r.live.end());
  r.announced.erase(std::remove(r.announced.begin(), r.announced.end(), this), r.announced.end());
}

void Progress::enter(const char* call, std::uint64_t bytes) noexcept {
  const std::int64_t now = steady_ns();
  const std::uint64_t seq = entered_.load(std::memory_order_relaxed) + 1;
  calls_[seq % kRing].store(call, std::memory_order_relaxed);
  entered_at_[seq % kRing].store(now, std::memory_order_relaxed);
  bytes_.fetch_add(bytes, std::memory_order_relaxed);
  changed_ns_.store(now, std::memory_order_relaxed);
  entered_.store(seq, std::memory_order_release);
}

void Progress::complete(std::uint64_t n) noexcept {
  const std::int64_t now = steady_ns();
  const std::uint64_t done = completed_.load(std::memory_order_relaxed);
  std::int64_t in = 0;
  for (std::uint64_t s = done + 1; s <= done + n; ++s) in += now - entered_at_[s % kRing].load(std::memory_order_relaxed);
  in_ns_.fetch_add(in, std::memory_order_relaxed);
  changed_ns_.store(now, std::memory_order_relaxed);
  completed_.store(done + n, std::memory_order_release);
}

std::string Progress::set_line() const {
  return "set id=" + id_ + " size=" + std::to_string(members_.size()) + " ranks=" + rank_ranges(members_);
}

std::string Progress::prog_line(std::int64_t now) const {
  const std::uint64_t in = entered_.load(std::memory_order_acquire);
  const std::uint64_t done = completed_.load(std::memory_order_acquire);
  const char* call = in > 0 ? calls_[in % kRing].load(std::memory_order_relaxed) : nullptr;
  const char* done_call = done > 0 && in - done < kRing ? calls_[done % kRing].load(std::memory_order_relaxed) : nullptr;
  std::int64_t in_ns = in_ns_.load(std::memory_order_relaxed);
  if (in > done) in_ns += now - entered_at_[(done + 1) % kRing].load(std::memory_order_relaxed);  // the one it is in
  const std::int64_t age = now - changed_ns_.load(std::memory_order_relaxed);
  return "prog set=" + id_ + " in=" + std::to_string(in) + " call=" + (call != nullptr ? call : "-") +
         " done=" + std::to_string(done) + " dcall=" + (done_call != nullptr ? done_call : "-") +
         " age=" + std::to_string(age / 1000000) + " bytes=" + std::to_string(bytes_.load(std::memory_order_relaxed)) +
         " inms=" + std::to_string(in_ns / 1000000);
}

}  // namespace gj::peer
