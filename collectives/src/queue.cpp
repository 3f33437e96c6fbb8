#include "queue.h"

#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <new>
#include <utility>
#include <vector>

#include "dtype.h"
#include "grouped.h"
#include "mpi_base/mpi_check.h"
#if GJ_HAVE_SHM
#include "shm/arrivals.h"
#include "shm/cpu_limit.h"
#endif

namespace gj {
namespace {

int rank_of(MPI_Comm comm) {
  int rank = 0;
  mpi_check(MPI_Comm_rank(comm, &rank), "gj::HostQueue: MPI_Comm_rank");
  return rank;
}

// Most requests one fused collective takes: bounds the agreement's wait for stragglers and
// the per-batch vectors, and is far above the per-call cost it amortizes.
constexpr std::size_t kMaxFused = 1024;

const char* level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "an unknown thread level";
  }
}

// Runs f; an exception becomes (code, message).
template <class F>
std::pair<gjResult_t, std::string> outcome(F&& f) noexcept {
  try {
    f();
    return {gjSuccess, ""};
  } catch (const Error& e) {
    return {e.code(), e.what()};
  } catch (const std::bad_alloc&) {
    return {gjSystemError, "out of memory"};
  } catch (const std::exception& e) {
    return {gjInternalError, e.what()};
  } catch (...) {
    return {gjInternalError, "unknown exception"};
  }
}

}  // namespace

bool Completion::done() const {
  std::lock_guard<std::mutex> lock(m_);
  return done_;
}

gjResult_t Completion::wait(std::string* message) {
  std::unique_lock<std::mutex> lock(m_);
  cv_.wait(lock, [&] { return done_; });
  if (message != nullptr) *message = message_;
  return code_;
}

void Completion::finish(gjResult_t code, std::string message) {
  {
    std::lock_guard<std::mutex> lock(m_);
    done_ = true;
    code_ = code;
    message_ = std::move(message);
  }
  cv_.notify_all();
}

bool patient_progress(ProgressWait choice, int local_ranks, int cpus) {
  if (choice != ProgressWait::Auto) return choice == ProgressWait::Sleep;
  return 2L * local_ranks > cpus;
}

ShmWait engine_wait(ShmWait setting, bool patient) {
  return setting == ShmWait::Auto && patient ? ShmWait::Sleep : setting;
}

int cpus_of_this_process() {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int mask = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
#if GJ_HAVE_SHM
  const int quota = shm::cgroup_cpu_limit();
#else
  const int quota = 0;
#endif
  return std::max(1, quota > 0 ? std::min(mask, quota) : mask);
}

HostQueue::HostQueue(MPI_Comm comm, Backend& host, int thread_level, bool patient, long timeout_ms)
    : comm_(comm), host_(host), stall_(timeout_ms, rank_of(comm)), thread_level_(thread_level), patient_(false) {
#if GJ_HAVE_SHM
  // Every rank arrives when any rank waits for arrivals: the board is collective.
  int wanted = patient ? 1 : 0;
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, &wanted, 1, MPI_INT, MPI_MAX, comm),
            "gj::HostQueue: MPI_Allreduce(progress wait)");
  std::string why_not;
  if (wanted != 0) arrivals_ = shm::Arrivals::create(comm, timeout_ms, &why_not);
  patient_ = patient && arrivals_ != nullptr;
#else
  (void)patient;
#endif
}

HostQueue::~HostQueue() { shutdown(); }

void HostQueue::watch_peers(std::shared_ptr<const peer::PeerCheck> peers) {
#if GJ_HAVE_SHM
  if (arrivals_) arrivals_->watch_peers(peers);
#endif
  peers_ = std::move(peers);
}

void HostQueue::throw_if_failed(const char* call) const {
  if (!failed_) return;
  throw Error(failed_->code(), std::string(call) + ": the communicator stopped after a failed request (" +
                                   failed_->what() + "); destroy it and create a new one");
}

void HostQueue::execute(const Work& w) const {
  if (w.agree_first) require_same_on_all_ranks(comm_, w.call, w.sig);
  w.body();
}

std::uint64_t HostQueue::arrive() {
#if GJ_HAVE_SHM
  if (arrivals_) return arrivals_->arrive();
#endif
  return 0;
}

void HostQueue::wait_for_arrivals(std::uint64_t n) const {
#if GJ_HAVE_SHM
  if (patient_) arrivals_->wait_for_peers(n);
#else
  (void)n;
#endif
}

bool HostQueue::enter(const char* call) {
  if (!threaded_.load()) {
    while (inline_.exchange(true)) std::this_thread::yield();  // another blocking caller
    if (!threaded_.load()) {  // no progress thread: nothing queued, nothing failed
      arrive();
      return true;
    }
    inline_.store(false);
  }
  std::unique_lock<std::mutex> lock(m_);
  if (!items_.empty() || busy_) idle_cv_.wait(lock, [&] { return items_.empty() && !busy_; });
  throw_if_failed(call);
  busy_ = true;
  arrive();
  return false;
}

void HostQueue::leave(bool fast) {
  if (fast) {
    inline_.store(false);
    return;
  }
  bool queued = false;
  {
    std::lock_guard<std::mutex> lock(m_);
    busy_ = false;
    queued = !items_.empty();
  }
  if (queued) work_cv_.notify_one();
  idle_cv_.notify_all();
}

std::shared_ptr<Completion> HostQueue::submit(Work w) {
  if (thread_level_ < MPI_THREAD_MULTIPLE) {
    throw Error(gjInvalidUsage, std::string(w.call) +
                                    ": nonblocking host operations run on a progress thread and need MPI "
                                    "initialized with MPI_THREAD_MULTIPLE, but this process's MPI provides " +
                                    level_name(thread_level_) +
                                    "; call MPI_Init_thread with MPI_THREAD_MULTIPLE, or let gjCommInitWorld "
                                    "initialize MPI");
  }
  if (!threaded_.load()) {  // from now on blocking calls take the mutex path
    threaded_.store(true);
    while (inline_.load()) std::this_thread::yield();
  }
  auto done = std::make_shared<Completion>();
  {
    std::lock_guard<std::mutex> lock(m_);
    throw_if_failed(w.call);
    if (stop_) throw Error(gjInvalidUsage, std::string(w.call) + ": the communicator is being destroyed");
    items_.push_back(Item{std::move(w), done});
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  work_cv_.notify_one();
  return done;
}

void HostQueue::loop() {
  std::unique_lock<std::mutex> lock(m_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || (!items_.empty() && !busy_); });
    if (items_.empty()) {
      if (stop_) return;
      continue;
    }
    if (busy_) continue;  // stop_ with a blocking caller still running
    run_front(lock);
  }
}

void HostQueue::run_front(std::unique_lock<std::mutex>& lock) {
  busy_ = true;
  // How many queued requests this rank could fuse with the front one (the peers may have fewer).
  const Work& front = items_.front().work;
  std::size_t offer = 1;
  const bool fusing = front.fuse && front.fuse->limit > 0;
  if (fusing) {
    const std::size_t es = dtype_size(front.fuse->dtype);
    std::size_t bytes = front.fuse->count * es;
    for (auto it = items_.begin() + 1; it != items_.end(); ++it) {
      if (offer >= kMaxFused || !it->work.fuse || !it->work.fuse->same_kind(*front.fuse)) break;
      const std::size_t b = it->work.fuse->count * es;
      if (b > front.fuse->limit || bytes > front.fuse->limit - b) break;
      bytes += b;
      ++offer;
    }
  }
  std::vector<Item> batch;
  batch.reserve(offer);  // no reallocation below: `first` stays valid
  batch.push_back(std::move(items_.front()));
  items_.pop_front();
  const Work& first = batch.front().work;
  lock.unlock();

  const auto [code, message] = outcome([&] {
    const peer::Watching watching(peers_.get());
    check_peers();
    wait_for_arrivals(arrive());
    const Armed armed(stall_, first.call);
    if (!fusing) return execute(first);
    // Every rank takes the same number: the smallest any rank has queued (at least the
    // first, which every rank has). With the check on, the first's arguments ride along.
    std::size_t k = agree_min(comm_, first.call, first.sig, first.agree_first, offer);
    if (k <= 1) return first.body();
    {
      std::lock_guard<std::mutex> relock(m_);
      for (std::size_t i = 1; i < k && i < offer && !items_.empty(); ++i) {
        batch.push_back(std::move(items_.front()));
        items_.pop_front();
      }
    }
    k = batch.size();
    std::vector<const void*> sends(k);
    std::vector<void*> recvs(k);
    std::vector<std::size_t> counts(k);
    std::size_t total = 0;
    for (std::size_t i = 0; i < k; ++i) {
      const Work::Fusible& f = *batch[i].work.fuse;
      sends[i] = f.send;
      recvs[i] = f.recv;
      counts[i] = f.count;
      total += f.count;
    }
    const Work::Fusible& f = *batch.front().work.fuse;
    if (first.agree_first) {  // the fused requests' counts, beyond the first
      Signature s = first.sig;
      s.kind = Kind::GroupedAllReduce;
      s.count = total;
      s.ntensors = k;
      s.counts_hash = hash_counts(counts.data(), static_cast<int>(k));
      if (!same_on_all_ranks(comm_, first.call, s)) {
        // Some later request differs across ranks: the first (checked alone above) runs
        // alone, the others go back to be checked one by one, so only a mismatched one fails.
        {
          std::lock_guard<std::mutex> relock(m_);
          while (batch.size() > 1) {
            items_.push_front(std::move(batch.back()));
            batch.pop_back();
          }
        }
        return batch.front().work.body();
      }
    }
    grouped_allreduce(host_, sends.data(), recvs.data(), counts.data(), static_cast<int>(k), f.dtype, f.op,
                      f.scale, f.limit, nullptr);
  });

  lock.lock();
  busy_ = false;
  if (code != gjSuccess && !failed_) failed_.emplace(code, message);
  for (Item& it : batch) it.done->finish(code, message);
  if (progress_ != nullptr) progress_->complete(batch.size());
  if (code != gjSuccess) fail_all_queued(message);
  idle_cv_.notify_all();
}

void HostQueue::fail_all_queued(const std::string& why) {
  const gjResult_t code = failed_ ? failed_->code() : gjInvalidUsage;
  for (Item& it : items_) {
    it.done->finish(code, std::string(it.work.call) + ": not run, an earlier request failed: " + why);
  }
  if (progress_ != nullptr && !items_.empty()) progress_->complete(items_.size());
  items_.clear();
}

void HostQueue::shutdown() noexcept {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HostQueue::abort() noexcept {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
    if (!failed_) failed_.emplace(gjInvalidUsage, "the communicator was aborted");
    fail_all_queued("the communicator was aborted");
  }
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace gj
