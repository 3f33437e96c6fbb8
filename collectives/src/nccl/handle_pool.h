// Spare handles (the CUDA events of device requests) kept for reuse: a request may be issued
// per tensor per step, and creating an event costs more than recording a spare one. Pure
// bookkeeping: the caller creates and destroys the handles themselves.
#pragma once

#include <cstddef>
#include <vector>

namespace gj::nccl {

template <class Handle>
class HandlePool {
 public:
  // At most max_spare handles are kept; more given back are the caller's to destroy.
  explicit HandlePool(std::size_t max_spare) : max_spare_(max_spare) {}

  // true and a spare handle in *out, or false: the caller creates one (and calls created()).
  bool take(Handle* out) {
    if (spare_.empty()) return false;
    *out = spare_.back();
    spare_.pop_back();
    ++live_;
    return true;
  }
  void created() { ++live_; }
  // A live handle is no longer used: true when kept as a spare, false when the caller must
  // destroy it now (the pool is full).
  bool give_back(Handle h) {
    if (live_ > 0) --live_;
    if (spare_.size() >= max_spare_) return false;
    spare_.push_back(h);
    return true;
  }
  // The spares, for the caller to destroy (at teardown); the pool is empty afterwards.
  std::vector<Handle> drain() {
    std::vector<Handle> out;
    out.swap(spare_);
    return out;
  }
  std::size_t live() const { return live_; }
  std::size_t spare() const { return spare_.size(); }

 private:
  std::size_t max_spare_;
  std::size_t live_ = 0;
  std::vector<Handle> spare_;
};

}  // namespace gj::nccl
