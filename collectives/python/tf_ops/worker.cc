#include "worker.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace gj_tf {
namespace {

class Worker {
 public:
  Worker() : thread_([this] { run(); }) { thread_.detach(); }

  void post(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(m_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(m_);
        cv_.wait(lock, [this] { return !jobs_.empty(); });
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::thread thread_;
};

}  // namespace

void post(gjComm_t comm, std::function<void()> job) {
  // Workers are never destroyed (detached; a communicator's address may be reused by a later one,
  // which then shares its thread): a process exiting with an op in flight must not join them.
  static std::mutex m;
  static auto* workers = new std::unordered_map<gjComm_t, Worker*>();
  Worker* w;
  {
    std::lock_guard<std::mutex> lock(m);
    Worker*& slot = (*workers)[comm];
    if (slot == nullptr) slot = new Worker();
    w = slot;
  }
  w->post(std::move(job));
}

}  // namespace gj_tf
