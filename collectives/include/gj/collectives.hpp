// gj collectives, C++17 wrapper over the C ABI (collectives.h): a move-only RAII communicator,
// typed exceptions carrying the result code, typed overloads (float, double, int32_t,
// int64_t, uint8_t, gj::float16, gj::bfloat16; int8_t, int16_t and bool for data movement)
// so the dtype follows from the buffer type, and RAII nonblocking requests (gj::Request).
//
//   gj::Communicator comm = gj::Communicator::world();
//   std::vector<float> grad(n);
//   comm.allreduce(grad, gjAvg);                 // in place
//   comm.broadcast(params.data(), params.size(), /*root=*/0);
#ifndef GJ_COLLECTIVES_HPP_
#define GJ_COLLECTIVES_HPP_

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gj/collectives.h"

namespace gj {

// ---- Errors -------------------------------------------------------------------------------
// Base of every exception the wrapper throws; what() is the library's last-error detail.
class CollectivesError : public std::runtime_error {
 public:
  CollectivesError(gjResult_t code, const std::string& detail)
      : std::runtime_error(detail.empty() ? gjGetErrorString(code) : detail), code_(code) {}
  gjResult_t code() const noexcept { return code_; }

 private:
  gjResult_t code_;
};

#define GJ_COLLECTIVES_ERROR_(Name)                                                     \
  class Name : public CollectivesError {                                                \
   public:                                                                              \
    Name(gjResult_t code, const std::string& detail) : CollectivesError(code, detail) {} \
  };
GJ_COLLECTIVES_ERROR_(InvalidArgumentError)  // gjInvalidArgument
GJ_COLLECTIVES_ERROR_(InvalidUsageError)     // gjInvalidUsage
GJ_COLLECTIVES_ERROR_(UnsupportedError)      // gjUnsupported
GJ_COLLECTIVES_ERROR_(SystemError)           // gjSystemError
GJ_COLLECTIVES_ERROR_(MpiError)              // gjMpiError
GJ_COLLECTIVES_ERROR_(NcclError)             // gjNcclError
GJ_COLLECTIVES_ERROR_(CudaError)             // gjCudaError
GJ_COLLECTIVES_ERROR_(TimeoutError)          // gjTimeout
GJ_COLLECTIVES_ERROR_(InternalError)         // gjInternalError and unknown codes
GJ_COLLECTIVES_ERROR_(PeerLostError)         // gjPeerLost
#undef GJ_COLLECTIVES_ERROR_

// Throws the exception type matching result (nothing for gjSuccess).
inline void check(gjResult_t result, gjComm_t comm = nullptr) {
  if (result == gjSuccess) return;
  const std::string detail = gjGetLastError(comm);
  switch (result) {
    case gjInvalidArgument: throw InvalidArgumentError(result, detail);
    case gjInvalidUsage: throw InvalidUsageError(result, detail);
    case gjUnsupported: throw UnsupportedError(result, detail);
    case gjSystemError: throw SystemError(result, detail);
    case gjMpiError: throw MpiError(result, detail);
    case gjNcclError: throw NcclError(result, detail);
    case gjCudaError: throw CudaError(result, detail);
    case gjTimeout: throw TimeoutError(result, detail);
    case gjPeerLost: throw PeerLostError(result, detail);
    default: throw InternalError(result, detail);
  }
}

// ---- Element types ------------------------------------------------------------------------
// 16-bit floats as raw bits (C++17 has no standard half type).
struct float16 {
  std::uint16_t bits;
};
struct bfloat16 {
  std::uint16_t bits;
};

template <class T>
struct dtype_of;  // no dtype for other types: a compile error names dtype_of<T>
template <> struct dtype_of<float> { static constexpr gjDataType_t value = gjFloat32; };
template <> struct dtype_of<double> { static constexpr gjDataType_t value = gjFloat64; };
template <> struct dtype_of<float16> { static constexpr gjDataType_t value = gjFloat16; };
template <> struct dtype_of<bfloat16> { static constexpr gjDataType_t value = gjBfloat16; };
template <> struct dtype_of<std::int32_t> { static constexpr gjDataType_t value = gjInt32; };
template <> struct dtype_of<std::int64_t> { static constexpr gjDataType_t value = gjInt64; };
template <> struct dtype_of<std::uint8_t> { static constexpr gjDataType_t value = gjUint8; };
template <> struct dtype_of<std::int8_t> { static constexpr gjDataType_t value = gjInt8; };
template <> struct dtype_of<std::int16_t> { static constexpr gjDataType_t value = gjInt16; };
template <> struct dtype_of<bool> { static constexpr gjDataType_t value = gjBool; };
static_assert(sizeof(bool) == 1, "gjBool is one byte per element");
template <class T>
constexpr gjDataType_t dtype_of_v = dtype_of<std::remove_cv_t<T>>::value;

// ---- Requests -----------------------------------------------------------------------------
// A nonblocking operation in flight (move-only). wait() blocks and throws the operation's
// error; test() polls. Destroying an unfinished Request waits for it (errors ignored: call
// wait() to see them), so buffers are never released under a running operation.
class Request {
 public:
  Request() noexcept = default;
  explicit Request(gjRequest_t handle) noexcept : req_(handle) {}
  Request(Request&& other) noexcept : req_(std::exchange(other.req_, nullptr)) {}
  Request& operator=(Request&& other) noexcept {
    if (this != &other) {
      reset();
      req_ = std::exchange(other.req_, nullptr);
    }
    return *this;
  }
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  ~Request() { reset(); }

  // Blocks until done; the Request is empty afterwards.
  void wait() { check(gjWait(std::exchange(req_, nullptr))); }
  // true once done (the Request is then empty; an error is thrown); false while running.
  bool test() {
    if (req_ == nullptr) return true;
    int done = 0;
    const gjResult_t rc = gjTest(req_, &done);
    if (done || rc != gjSuccess) req_ = nullptr;
    check(rc);
    return done != 0;
  }
  bool pending() const noexcept { return req_ != nullptr; }
  gjRequest_t handle() const noexcept { return req_; }

 private:
  void reset() noexcept {
    if (req_ != nullptr) gjWait(std::exchange(req_, nullptr));
  }
  gjRequest_t req_ = nullptr;
};

// ---- Communicator -------------------------------------------------------------------------
class Communicator {
 public:
  // Over MPI_COMM_WORLD, initializing MPI if needed (finalize with gj::finalize()).
  static Communicator world() {
    gjComm_t c = nullptr;
    check(gjCommInitWorld(&c));
    return Communicator(c);
  }
  // Over a duplicate of the caller's communicator: Communicator::from_mpi(MPI_COMM_WORLD).
  template <class MpiComm>
  static Communicator from_mpi(const MpiComm& mpi_comm) {
    gjComm_t c = nullptr;
    check(gjCommInitMpi(&c, &mpi_comm));
    return Communicator(c);
  }
  // Takes ownership of a handle from gjCommInitWorld / gjCommInitMpi.
  explicit Communicator(gjComm_t handle) noexcept : comm_(handle) {}

  Communicator(Communicator&& other) noexcept : comm_(std::exchange(other.comm_, nullptr)) {}
  Communicator& operator=(Communicator&& other) noexcept {
    if (this != &other) {
      reset();
      comm_ = std::exchange(other.comm_, nullptr);
    }
    return *this;
  }
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  // Destroys the communicator (collective); errors are ignored here, call destroy() to see them.
  ~Communicator() { reset(); }

  // Collective destroy that reports errors. The object is empty afterwards.
  void destroy() { check(gjCommDestroy(std::exchange(comm_, nullptr))); }
  // Error path: tear down without waiting for peers. The object is empty afterwards.
  void abort() { check(gjCommAbort(std::exchange(comm_, nullptr))); }

  gjComm_t handle() const noexcept { return comm_; }
  explicit operator bool() const noexcept { return comm_ != nullptr; }

  int rank() const { return get(&gjCommRank); }
  int size() const { return get(&gjCommSize); }
  int local_rank() const { return get(&gjCommLocalRank); }
  int local_size() const { return get(&gjCommLocalSize); }
  gjBackend_t backend(bool device_buffers) const {
    gjBackend_t b = gjBackendMpi;
    check(gjCommBackend(comm_, device_buffers ? 1 : 0, &b), comm_);
    return b;
  }
  std::size_t fusion_threshold() const {
    std::size_t bytes = 0;
    check(gjCommGetFusionThreshold(comm_, &bytes), comm_);
    return bytes;
  }
  void set_fusion_threshold(std::size_t bytes) { check(gjCommSetFusionThreshold(comm_, bytes), comm_); }

  // Untyped, as the C API.
  void allreduce(const void* send, void* recv, std::size_t count, gjDataType_t dtype, gjRedOp_t op,
                 void* stream = nullptr) {
    check(gjAllReduce(send, recv, count, dtype, op, comm_, stream), comm_);
  }
  // Typed: (pointer, count) out of place, in place, and whole containers (data(), size()).
  template <class T>
  void allreduce(const T* send, T* recv, std::size_t count, gjRedOp_t op, void* stream = nullptr) {
    allreduce(send, recv, count, dtype_of_v<T>, op, stream);
  }
  template <class T>
  void allreduce(T* buf, std::size_t count, gjRedOp_t op, void* stream = nullptr) {
    allreduce(buf, buf, count, dtype_of_v<T>, op, stream);
  }
  template <class Container, class = decltype(std::declval<Container&>().data())>
  void allreduce(Container& buf, gjRedOp_t op, void* stream = nullptr) {
    allreduce(buf.data(), buf.size(), op, stream);
  }

  void broadcast(void* buf, std::size_t count, gjDataType_t dtype, int root, void* stream = nullptr) {
    check(gjBroadcast(buf, count, dtype, root, comm_, stream), comm_);
  }
  template <class T>
  void broadcast(T* buf, std::size_t count, int root, void* stream = nullptr) {
    broadcast(buf, count, dtype_of_v<T>, root, stream);
  }
  template <class Container, class = decltype(std::declval<Container&>().data())>
  void broadcast(Container& buf, int root, void* stream = nullptr) {
    broadcast(buf.data(), buf.size(), root, stream);
  }

  void grouped_allreduce(const void* const* sends, void* const* recvs, const std::size_t* counts,
                         int ntensors, gjDataType_t dtype, gjRedOp_t op, void* stream = nullptr) {
    check(gjGroupedAllReduce(sends, recvs, counts, ntensors, dtype, op, comm_, stream), comm_);
  }
  void allreduce_scaled(const void* send, void* recv, std::size_t count, gjDataType_t dtype, gjRedOp_t op,
                        double prescale, double postscale, void* stream = nullptr) {
    check(gjAllReduceScaled(send, recv, count, dtype, op, prescale, postscale, comm_, stream), comm_);
  }
  void grouped_allreduce_scaled(const void* const* sends, void* const* recvs, const std::size_t* counts,
                                int ntensors, gjDataType_t dtype, gjRedOp_t op, double prescale,
                                double postscale, void* stream = nullptr) {
    check(gjGroupedAllReduceScaled(sends, recvs, counts, ntensors, dtype, op, prescale, postscale, comm_, stream),
          comm_);
  }
  // Equal counts: recv holds size() * sendcount elements.
  void allgather(const void* send, void* recv, std::size_t sendcount, gjDataType_t dtype,
                 void* stream = nullptr) {
    check(gjAllGather(send, recv, sendcount, dtype, comm_, stream), comm_);
  }
  template <class T>
  void allgather(const T* send, T* recv, std::size_t sendcount, void* stream = nullptr) {
    allgather(send, recv, sendcount, dtype_of_v<T>, stream);
  }
  // Per-rank counts (size() entries, the same on every rank).
  void allgatherv(const void* send, void* recv, const std::vector<std::size_t>& recvcounts, gjDataType_t dtype,
                  void* stream = nullptr) {
    check(gjAllGatherV(send, recv, recvcounts.data(), dtype, comm_, stream), comm_);
  }
  template <class T>
  void allgatherv(const T* send, T* recv, const std::vector<std::size_t>& recvcounts, void* stream = nullptr) {
    allgatherv(send, recv, recvcounts, dtype_of_v<T>, stream);
  }
  void reduce_scatter(const void* send, void* recv, const std::vector<std::size_t>& recvcounts, gjDataType_t dtype,
                      gjRedOp_t op, double prescale = 1.0, double postscale = 1.0, void* stream = nullptr) {
    check(gjReduceScatter(send, recv, recvcounts.data(), dtype, op, prescale, postscale, comm_, stream), comm_);
  }
  template <class T>
  void reduce_scatter(const T* send, T* recv, const std::vector<std::size_t>& recvcounts, gjRedOp_t op,
                      double prescale = 1.0, double postscale = 1.0, void* stream = nullptr) {
    reduce_scatter(send, recv, recvcounts, dtype_of_v<T>, op, prescale, postscale, stream);
  }
  // sendcounts[q] elements to rank q, recvcounts[q] from it (size() entries each).
  void alltoallv(const void* send, const std::vector<std::size_t>& sendcounts, void* recv,
                 const std::vector<std::size_t>& recvcounts, gjDataType_t dtype, void* stream = nullptr) {
    check(gjAllToAllV(send, sendcounts.data(), recv, recvcounts.data(), dtype, comm_, stream), comm_);
  }
  template <class T>
  void alltoallv(const T* send, const std::vector<std::size_t>& sendcounts, T* recv,
                 const std::vector<std::size_t>& recvcounts, void* stream = nullptr) {
    alltoallv(send, sendcounts, recv, recvcounts, dtype_of_v<T>, stream);
  }
  void allreduce_adasum(const void* send, void* recv, std::size_t count, gjDataType_t dtype) {
    check(gjAllReduceAdasum(send, recv, count, dtype, comm_), comm_);
  }
  template <class T>
  void allreduce_adasum(const T* send, T* recv, std::size_t count) {
    allreduce_adasum(send, recv, count, dtype_of_v<T>);
  }
  void barrier() { check(gjBarrier(comm_), comm_); }
  // Collective; ranks with color < 0 get an empty Communicator.
  Communicator split(int color, int key) const {
    gjComm_t c = nullptr;
    check(gjCommSplit(comm_, color, key, &c), comm_);
    return Communicator(c);
  }
  void set_check(bool enabled) { check(gjCommSetCheck(comm_, enabled ? 1 : 0), comm_); }

  // Nonblocking forms: the buffers must stay valid until the Request completes.
  Request iallreduce(const void* send, void* recv, std::size_t count, gjDataType_t dtype, gjRedOp_t op,
                     double prescale = 1.0, double postscale = 1.0, void* stream = nullptr) {
    gjRequest_t r = nullptr;
    check(gjIallReduce(send, recv, count, dtype, op, prescale, postscale, comm_, stream, &r), comm_);
    return Request(r);
  }
  template <class T>
  Request iallreduce(T* buf, std::size_t count, gjRedOp_t op, void* stream = nullptr) {
    return iallreduce(buf, buf, count, dtype_of_v<T>, op, 1.0, 1.0, stream);
  }
  Request igrouped_allreduce(const void* const* sends, void* const* recvs, const std::size_t* counts, int ntensors,
                             gjDataType_t dtype, gjRedOp_t op, double prescale = 1.0, double postscale = 1.0,
                             void* stream = nullptr) {
    gjRequest_t r = nullptr;
    check(gjIgroupedAllReduce(sends, recvs, counts, ntensors, dtype, op, prescale, postscale, comm_, stream, &r),
          comm_);
    return Request(r);
  }
  Request ibroadcast(void* buf, std::size_t count, gjDataType_t dtype, int root, void* stream = nullptr) {
    gjRequest_t r = nullptr;
    check(gjIbroadcast(buf, count, dtype, root, comm_, stream, &r), comm_);
    return Request(r);
  }
  Request iallgather(const void* send, void* recv, std::size_t sendcount, gjDataType_t dtype,
                     void* stream = nullptr) {
    gjRequest_t r = nullptr;
    check(gjIallGather(send, recv, sendcount, dtype, comm_, stream, &r), comm_);
    return Request(r);
  }
  Request iallgatherv(const void* send, void* recv, const std::vector<std::size_t>& recvcounts, gjDataType_t dtype,
                      void* stream = nullptr) {
    gjRequest_t r = nullptr;
    check(gjIallGatherV(send, recv, recvcounts.data(), dtype, comm_, stream, &r), comm_);
    return Request(r);
  }
  Request ireduce_scatter(const void* send, void* recv, const std::vector<std::size_t>& recvcounts,
                          gjDataType_t dtype, gjRedOp_t op, double prescale = 1.0, double postscale = 1.0,
                          void* stream = nullptr) {
    gjRequest_t r = nullptr;
    check(gjIreduceScatter(send, recv, recvcounts.data(), dtype, op, prescale, postscale, comm_, stream, &r), comm_);
    return Request(r);
  }
  Request ialltoallv(const void* send, const std::vector<std::size_t>& sendcounts, void* recv,
                     const std::vector<std::size_t>& recvcounts, gjDataType_t dtype, void* stream = nullptr) {
    gjRequest_t r = nullptr;
    check(gjIallToAllV(send, sendcounts.data(), recv, recvcounts.data(), dtype, comm_, stream, &r), comm_);
    return Request(r);
  }
  Request iallreduce_adasum(const void* send, void* recv, std::size_t count, gjDataType_t dtype) {
    gjRequest_t r = nullptr;
    check(gjIallReduceAdasum(send, recv, count, dtype, comm_, &r), comm_);
    return Request(r);
  }
  Request ibarrier() {
    gjRequest_t r = nullptr;
    check(gjIbarrier(comm_, &r), comm_);
    return Request(r);
  }
  // gjIcontrolMax: values is overwritten with the elementwise max when the request completes.
  Request icontrol_max(std::vector<std::int64_t>& values) {
    gjRequest_t r = nullptr;
    check(gjIcontrolMax(values.data(), values.size(), comm_, &r), comm_);
    return Request(r);
  }

  // In place over (pointer, count) pairs of one element type.
  template <class T>
  void grouped_allreduce(const std::vector<std::pair<T*, std::size_t>>& tensors, gjRedOp_t op,
                         void* stream = nullptr) {
    std::vector<const void*> sends;
    std::vector<void*> recvs;
    std::vector<std::size_t> counts;
    for (const auto& t : tensors) {
      sends.push_back(t.first);
      recvs.push_back(t.first);
      counts.push_back(t.second);
    }
    grouped_allreduce(sends.data(), recvs.data(), counts.data(), static_cast<int>(tensors.size()),
                      dtype_of_v<T>, op, stream);
  }

 private:
  int get(gjResult_t (*fn)(gjComm_t, int*)) const {
    int v = 0;
    check(fn(comm_, &v), comm_);
    return v;
  }
  void reset() noexcept {
    if (comm_ != nullptr) gjCommDestroy(std::exchange(comm_, nullptr));
  }

  gjComm_t comm_ = nullptr;
};

// Finalizes MPI if Communicator::world() initialized it and no communicator is alive.
inline void finalize() { check(gjFinalize()); }

}  // namespace gj

#endif  // GJ_COLLECTIVES_HPP_
