#include "mpi/mpi_backend.h"

#include <algorithm>
#include <climits>
#include <string>

#include "dtype.h"
#include "error.h"
#include "host/reduce.h"
#include "mpi/mpi_check.h"
#include "mpi/mpi_types.h"

namespace gj {
namespace {

// MPI counts are int: larger buffers go in pieces of this many elements.
constexpr std::size_t kMaxMpiCount = std::size_t{1} << 30;

std::string describe(const char* what, std::size_t count, gjDataType_t dtype) {
  return std::string(what) + "(count=" + std::to_string(count) + ", dtype=" + dtype_name(dtype) + ")";
}

class MpiBackend final : public Backend {
 public:
  MpiBackend(MPI_Comm comm, std::unique_ptr<shm::ShmAllreduce> shm) : comm_(comm), shm_(std::move(shm)) {
    mpi_check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }

  gjBackend_t kind() const override { return gjBackendMpi; }

  void allreduce(const void* send, void* recv, std::size_t count, gjDataType_t dtype, gjRedOp_t op,
                 void* /*stream*/) override {
    require_live();
    if (count == 0) return;
    if (shm_ && shm_->preferred(count * dtype_size(dtype))) {
      shm_->allreduce(send, recv, count, dtype, op);
      return;
    }
    // gjAvg as the header defines it: floating contributions are divided before the sum,
    // the exact integer sum is divided after it.
    const bool prescale = op == gjAvg && is_floating(dtype);
    if (prescale) {
      host::scale(recv, send, count, dtype, 1.0 / size_);
      send = recv;
    }
    const std::size_t elem = dtype_size(dtype);
    const MPI_Datatype type = types_.datatype(dtype);
    const MPI_Op mpi_op = types_.op(dtype, op);
    for (std::size_t off = 0; off < count; off += kMaxMpiCount) {
      const std::size_t n = std::min(kMaxMpiCount, count - off);
      char* out = static_cast<char*>(recv) + off * elem;
      const void* in = send == recv ? MPI_IN_PLACE : static_cast<const char*>(send) + off * elem;
      mpi_check(MPI_Allreduce(in, out, static_cast<int>(n), type, mpi_op, comm_),
                describe("MPI_Allreduce", n, dtype) + " op=" + op_name(op));
    }
    if (op == gjAvg && !prescale) host::divide(recv, count, dtype, size_);
  }

  void broadcast(void* buf, std::size_t count, gjDataType_t dtype, int root, void* /*stream*/) override {
    require_live();
    const std::size_t bytes = count * dtype_size(dtype);
    for (std::size_t off = 0; off < bytes; off += kMaxMpiCount) {
      const std::size_t n = std::min(kMaxMpiCount, bytes - off);
      mpi_check(MPI_Bcast(static_cast<char*>(buf) + off, static_cast<int>(n), MPI_BYTE, root, comm_),
                describe("MPI_Bcast", count, dtype) + " root=" + std::to_string(root));
    }
  }

  void* fusion_buffer(std::size_t bytes) override {
    if (bytes > fusion_bytes_) {
      fusion_.reset();  // release the old buffer before allocating the larger one
      fusion_.reset(new unsigned char[bytes]);
      fusion_bytes_ = bytes;
    }
    return fusion_.get();
  }

  void pack(void* dst, const void* const* srcs, const std::size_t* bytes, int n, void* /*stream*/) override {
    auto* out = static_cast<unsigned char*>(dst);
    for (int i = 0; i < n; ++i) {
      if (bytes[i] > 0) host::copy(out, srcs[i], bytes[i]);  // not memcpy: see host::copy
      out += bytes[i];
    }
  }

  void unpack(void* const* dsts, const void* src, const std::size_t* bytes, int n, void* /*stream*/) override {
    const auto* in = static_cast<const unsigned char*>(src);
    for (int i = 0; i < n; ++i) {
      if (bytes[i] > 0) host::copy(dsts[i], in, bytes[i]);
      in += bytes[i];
    }
  }

  // The shared-memory path costs microseconds per call: packing would cost more than it saves.
  bool allreduce_unfused(const void* const* sends, void* const* recvs, const std::size_t* counts, int n,
                         gjDataType_t dtype, gjRedOp_t op, void* /*stream*/) override {
    require_live();
    if (!shm_) return false;
    for (int i = 0; i < n; ++i) {  // tensors MPI would take must go there, as per-tensor calls do
      if (counts[i] > 0 && !shm_->preferred(counts[i] * dtype_size(dtype))) return false;
    }
    shm_->allreduce_group(sends, recvs, counts, n, dtype, op);
    return true;
  }

  void abort() noexcept override { aborted_ = true; }

 private:
  void require_live() const {
    if (aborted_) throw Error(gjInvalidUsage, "the MPI backend was aborted");
  }

  MPI_Comm comm_;
  int size_ = 1;
  MpiTypes types_;
  std::unique_ptr<shm::ShmAllreduce> shm_;
  std::unique_ptr<unsigned char[]> fusion_;
  std::size_t fusion_bytes_ = 0;
  bool aborted_ = false;
};

}  // namespace

std::unique_ptr<Backend> make_mpi_backend(MPI_Comm comm, std::unique_ptr<shm::ShmAllreduce> shm) {
  return std::make_unique<MpiBackend>(comm, std::move(shm));
}

}  // namespace gj
