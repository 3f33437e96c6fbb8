#include "mpi/host_backend.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "alltoall/host_alltoall.h"
#include "dtype.h"
#include "error.h"
#include "host/reduce.h"
#include "mpi_base/mpi_check.h"
#include "mpi_base/mpi_types.h"
#include "mpi_base/mpi_wait.h"
#include "mpi/small_allreduce.h"

namespace gj {
namespace {

// MPI counts are int: larger buffers go in pieces of this many elements.
constexpr std::size_t kMaxMpiCount = std::size_t{1} << 30;

std::string describe(const char* what, std::size_t count, gjDataType_t dtype) {
  return std::string(what) + "(count=" + std::to_string(count) + ", dtype=" + dtype_name(dtype) + ")";
}

// The factor each contribution is multiplied by before the reduction: prescale, with float
// avg's 1/size folded in (divide-then-sum). The shared-memory engine applies the same rule.
double input_factor(gjDataType_t dtype, gjRedOp_t op, Scale scale, int size) {
  return op == gjAvg && is_floating(dtype) ? scale.pre / size : scale.pre;
}

class HostBackend final : public Backend {
 public:
  HostBackend(MPI_Comm comm, std::unique_ptr<shm::ShmAllreduce> shm, std::unique_ptr<Hierarchy> hierarchy)
      : comm_(comm), shm_(std::move(shm)), hierarchy_(std::move(hierarchy)) {
    mpi_check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    mpi_check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  }

  gjBackend_t kind() const override { return gjBackendMpi; }

  void allreduce(const void* send, void* recv, std::size_t count, gjDataType_t dtype, gjRedOp_t op,
                 void* stream) override {
    allreduce_scaled(send, recv, count, dtype, op, Scale{}, stream);
  }

  void allreduce_scaled(const void* send, void* recv, std::size_t count, gjDataType_t dtype, gjRedOp_t op,
                        Scale scale, void* /*stream*/) override {
    require_live();
    if (count == 0) return;
    if (hierarchy_) {
      hierarchy_->allreduce(send, recv, count, dtype, op, scale);
      return;
    }
    if (shm_ && shm_->preferred(count * dtype_size(dtype))) {
      shm_->allreduce(send, recv, count, dtype, op, scale.pre, scale.post);
      return;
    }
    const double in = input_factor(dtype, op, scale, size_);
    if (in != 1.0) {
      host::scale(recv, send, count, dtype, in);
      send = recv;
    }
    const std::size_t elem = dtype_size(dtype);
    if (small_allreduce_fits(count * elem, size_)) {
      if (send != recv) host::copy(recv, send, count * elem);
      small_allreduce(recv, count, dtype, op, comm_, rank_, size_, small_scratch_);
      finish(recv, count, dtype, op, scale);
      return;
    }
    const MPI_Datatype type = types_.datatype(dtype);
    const MPI_Op mpi_op = types_.op(dtype, op);
    for (std::size_t off = 0; off < count; off += kMaxMpiCount) {
      const std::size_t n = std::min(kMaxMpiCount, count - off);
      char* out = static_cast<char*>(recv) + off * elem;
      const void* inbuf = send == recv ? MPI_IN_PLACE : static_cast<const char*>(send) + off * elem;
      run_polled([&](MPI_Request* r) { return MPI_Iallreduce(inbuf, out, static_cast<int>(n), type, mpi_op, comm_, r); },
                 [&] { return describe("MPI_Iallreduce", n, dtype) + " op=" + op_name(op); });
    }
    finish(recv, count, dtype, op, scale);
  }

  void broadcast(void* buf, std::size_t count, gjDataType_t dtype, int root, void* /*stream*/) override {
    require_live();
    const std::size_t bytes = count * dtype_size(dtype);
    if (hierarchy_) {
      hierarchy_->broadcast(buf, bytes, root);
      return;
    }
    if (shm_ && shm_->preferred(bytes)) {
      shm_->broadcast(buf, bytes, root);
      return;
    }
    for (std::size_t off = 0; off < bytes; off += kMaxMpiCount) {
      const std::size_t n = std::min(kMaxMpiCount, bytes - off);
      run_polled(
          [&](MPI_Request* r) {
            return MPI_Ibcast(static_cast<char*>(buf) + off, static_cast<int>(n), MPI_BYTE, root, comm_, r);
          },
          [&] { return describe("MPI_Ibcast", count, dtype) + " root=" + std::to_string(root); });
    }
  }

  // Byte-wise: every dtype moves alike. In place when send is this rank's block of recv.
  void allgatherv(const void* send, void* recv, const std::size_t* counts, gjDataType_t dtype,
                  void* /*stream*/) override {
    require_live();
    if (hierarchy_ && hierarchy_->allgatherv(send, recv, counts, dtype)) return;
    const std::size_t es = dtype_size(dtype);
    auto* out = static_cast<char*>(recv);
    std::size_t total = 0, at = 0;
    bool equal = true, fits = true;
    for (int q = 0; q < size_; ++q) {
      if (q == rank_) at = total;
      total += counts[q] * es;
      equal = equal && counts[q] == counts[0];
      fits = fits && counts[q] * es <= static_cast<std::size_t>(INT_MAX);
    }
    if (shm_ && shm_->preferred(total)) {
      std::vector<std::size_t> bytes(counts, counts + size_);
      for (std::size_t& b : bytes) b *= es;
      shm_->allgatherv(send, recv, bytes.data());
      return;
    }
    fits = fits && total <= static_cast<std::size_t>(INT_MAX);
    const std::size_t mine = counts[rank_] * es;
    const bool in_place = send == out + at;
    // Messages are built only on failure: this runs on every call.
    const auto polled = [&](const char* what, auto&& start) {
      run_polled(start, [&] { return describe(what, counts[rank_], dtype); });
    };
    if (fits && equal) {
      const int n = static_cast<int>(mine);
      polled("MPI_Iallgather", [&](MPI_Request* r) {
        return MPI_Iallgather(in_place ? MPI_IN_PLACE : send, n, MPI_BYTE, out, n, MPI_BYTE, comm_, r);
      });
      return;
    }
    if (fits) {
      std::vector<int> n(static_cast<std::size_t>(size_)), d(static_cast<std::size_t>(size_));
      int displ = 0;
      for (std::size_t q = 0; q < n.size(); ++q) {
        n[q] = static_cast<int>(counts[q] * es);
        d[q] = displ;
        displ += n[q];
      }
      polled("MPI_Iallgatherv", [&](MPI_Request* r) {
        return MPI_Iallgatherv(in_place ? MPI_IN_PLACE : send, static_cast<int>(mine), MPI_BYTE, out, n.data(),
                               d.data(), MPI_BYTE, comm_, r);
      });
      return;
    }
    // Beyond int byte counts: every rank's block is broadcast from its owner, in pieces.
    if (!in_place && mine > 0) host::copy(out + at, send, mine);
    std::size_t displ = 0;
    for (int q = 0; q < size_; ++q) {
      const std::size_t bytes = counts[q] * es;
      for (std::size_t off = 0; off < bytes; off += kMaxMpiCount) {
        const std::size_t n = std::min(kMaxMpiCount, bytes - off);
        polled("MPI_Ibcast(allgather block)", [&](MPI_Request* r) {
          return MPI_Ibcast(out + displ + off, static_cast<int>(n), MPI_BYTE, q, comm_, r);
        });
      }
      displ += bytes;
    }
  }

  void reduce_scatter(const void* send, void* recv, const std::size_t* counts, gjDataType_t dtype, gjRedOp_t op,
                      Scale scale, void* /*stream*/) override {
    require_live();
    const std::size_t es = dtype_size(dtype);
    std::size_t total = 0, offset = 0;
    bool fits = true;
    for (int q = 0; q < size_; ++q) {
      if (q == rank_) offset = total;
      total += counts[q];
      fits = fits && counts[q] <= kMaxMpiCount;
    }
    if (total == 0) return;
    if (hierarchy_ && hierarchy_->reduce_scatter(send, recv, counts, dtype, op, scale)) return;
    if (shm_ && shm_->preferred(total * es)) {
      shm_->reduce_scatter(send, recv, counts, dtype, op, scale.pre, scale.post);
      return;
    }
    const std::size_t mine = counts[rank_];
    // MPI needs send and recv apart: in place (recv is this rank's slice of send) and
    // prescaling both work on a private copy of the input.
    const auto* src = static_cast<const char*>(send);
    const double in = input_factor(dtype, op, scale, size_);
    const bool in_place = static_cast<const char*>(recv) == src + offset * es;
    if (in != 1.0 || in_place) {
      char* tmp = scratch(total * es);
      if (in != 1.0) host::scale(tmp, src, total, dtype, in);
      else host::copy(tmp, src, total * es);
      src = tmp;
    }
    const MPI_Datatype type = types_.datatype(dtype);
    const MPI_Op mpi_op = types_.op(dtype, op);
    if (fits) {
      std::vector<int> n(static_cast<std::size_t>(size_));
      for (std::size_t q = 0; q < n.size(); ++q) n[q] = static_cast<int>(counts[q]);
      run_polled([&](MPI_Request* r) { return MPI_Ireduce_scatter(src, recv, n.data(), type, mpi_op, comm_, r); },
                 [&] { return describe("MPI_Ireduce_scatter", mine, dtype) + " op=" + op_name(op); });
    } else {  // a slice beyond int counts: one MPI_Reduce per slice and piece, to its owner
      std::size_t at = 0;
      for (int q = 0; q < size_; ++q) {
        for (std::size_t off = 0; off < counts[q]; off += kMaxMpiCount) {
          const std::size_t n = std::min(kMaxMpiCount, counts[q] - off);
          void* out = q == rank_ ? static_cast<char*>(recv) + off * es : nullptr;
          run_polled(
              [&](MPI_Request* r) {
                return MPI_Ireduce(src + (at + off) * es, out, static_cast<int>(n), type, mpi_op, q, comm_, r);
              },
              [&] { return describe("MPI_Ireduce(reduce-scatter slice)", n, dtype) + " root=" + std::to_string(q); });
        }
        at += counts[q];
      }
    }
    if (mine > 0) finish(recv, mine, dtype, op, scale);
  }

  void alltoallv(const void* send, const std::size_t* sendcounts, void* recv, const std::size_t* recvcounts,
                 gjDataType_t dtype, void* /*stream*/) override {
    require_live();
    alltoall::host_alltoallv(comm_, send, sendcounts, recv, recvcounts, dtype);
  }

  void* fusion_buffer(std::size_t bytes, void* /*stream*/) override {
    if (bytes > fusion_bytes_) {
      fusion_.reset();  // release the old buffer before allocating the larger one
      fusion_.reset(new unsigned char[bytes]);
      fusion_bytes_ = bytes;
    }
    return fusion_.get();
  }

  void pack(void* dst, const void* const* srcs, const std::size_t* bytes, const std::size_t* offsets, int n,
            void* /*stream*/) override {
    auto* out = static_cast<unsigned char*>(dst);
    std::size_t end = 0;
    for (int i = 0; i < n; ++i) {
      // Zeros in the alignment gaps: reducing indeterminate bytes as integers could overflow.
      if (offsets[i] > end) std::memset(out + end, 0, offsets[i] - end);
      if (bytes[i] > 0) host::copy(out + offsets[i], srcs[i], bytes[i]);  // not memcpy: see host::copy
      end = offsets[i] + bytes[i];
    }
  }

  void unpack(void* const* dsts, const void* src, const std::size_t* bytes, const std::size_t* offsets, int n,
              void* /*stream*/) override {
    const auto* in = static_cast<const unsigned char*>(src);
    for (int i = 0; i < n; ++i) {
      if (bytes[i] > 0) host::copy(dsts[i], in + offsets[i], bytes[i]);
    }
  }

  // The shared-memory path costs microseconds per call: packing would cost more than it saves.
  bool allreduce_unfused(const void* const* sends, void* const* recvs, const std::size_t* counts, int n,
                         gjDataType_t dtype, gjRedOp_t op, Scale scale, void* /*stream*/) override {
    require_live();
    if (!shm_) return false;
    for (int i = 0; i < n; ++i) {  // tensors MPI would take must go there, as per-tensor calls do
      if (counts[i] > 0 && !shm_->preferred(counts[i] * dtype_size(dtype))) return false;
    }
    shm_->allreduce_group(sends, recvs, counts, n, dtype, op, scale.pre, scale.post);
    return true;
  }

  void abort() noexcept override { aborted_ = true; }

 private:
  void require_live() const {
    if (aborted_) throw Error(gjInvalidUsage, "the MPI backend was aborted");
  }

  // After the MPI reduction: integer avg's truncating division, then postscale.
  void finish(void* recv, std::size_t count, gjDataType_t dtype, gjRedOp_t op, Scale scale) const {
    if (op == gjAvg && !is_floating(dtype)) host::divide(recv, count, dtype, size_);
    if (scale.post != 1.0) host::scale(recv, recv, count, dtype, scale.post);
  }

  char* scratch(std::size_t bytes) {
    if (bytes > scratch_bytes_) {
      scratch_.reset();
      scratch_.reset(new char[bytes]);
      scratch_bytes_ = bytes;
    }
    return scratch_.get();
  }

  MPI_Comm comm_;
  int size_ = 1;
  int rank_ = 0;
  MpiTypes types_;
  std::unique_ptr<shm::ShmAllreduce> shm_;
  // Ranks on several nodes: allreduce (so the grouped allreduce's fused groups: it is never
  // unfused here), broadcast, allgather and reduce-scatter run in two levels.
  std::unique_ptr<Hierarchy> hierarchy_;
  std::unique_ptr<unsigned char[]> fusion_;
  std::size_t fusion_bytes_ = 0;
  std::unique_ptr<char[]> scratch_;
  std::size_t scratch_bytes_ = 0;
  std::vector<unsigned char> small_scratch_;
  bool aborted_ = false;
};

}  // namespace

std::unique_ptr<Backend> make_host_backend(MPI_Comm comm, std::unique_ptr<shm::ShmAllreduce> shm,
                                           std::unique_ptr<Hierarchy> hierarchy) {
  return std::make_unique<HostBackend>(comm, std::move(shm), std::move(hierarchy));
}

}  // namespace gj
