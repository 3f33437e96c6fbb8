// What every gj.tensorflow kernel shares: its attributes, its communicator, the agreement
// record issued on the executor's thread and checked on the set's completion thread
// (worker.h), then the call's data requests there, and `done`.
#ifndef GJ_TF_OPS_KERNEL_BASE_H_
#define GJ_TF_OPS_KERNEL_BASE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comms.h"
#include "record.h"
#include "tensorflow/core/framework/op_kernel.h"

namespace gj_tf {

using tensorflow::AsyncOpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;
using tensorflow::TensorShape;

// The library's dtype code of a reducible TensorFlow dtype, or -1.
int reduce_code(tensorflow::DataType t);
// Python's repr of the shape as a tuple: "()", "(2,)", "(2, 3)".
std::string shape_text(const TensorShape& s);
double from_bits(int64_t bits);
// A tensor's memory (nullptr when it has no elements, as the Python path passes).
void* data_of(const Tensor& t);
// Where a kernel's data is: host memory (stream null), or a GPU whose TensorFlow compute stream
// the library's NCCL calls are enqueued on (device_kernels.cc).
struct Place {
  bool device = false;
  void* stream = nullptr;  // a cudaStream_t
};
// The requests of device calls, enqueued on the stream: waited for (freed, a failure logged)
// after the op's `done`, so nothing on the host waits for the GPU before the consumer runs.
using Later = std::vector<gjRequest_t>;

// Issues a nonblocking call (issue(&request)) and, on the host, waits for it; on a device its
// request goes to *later. The library's result as a Status.
absl::Status run(const Comm& comm, const char* call, const std::function<gjResult_t(gjRequest_t*)>& issue,
                 const Place& place = Place(), Later* later = nullptr);

class GjKernel : public AsyncOpKernel {
 public:
  explicit GjKernel(OpKernelConstruction* c);

 protected:
  // The set's communicator, or false after failing the op (done called).
  bool comm(OpKernelContext* ctx, const DoneCallback& done, Comm* out);
  // Issues rec now; on comm's completion thread, once every rank's record arrived and agreed,
  // runs then(rec, later) (the data calls), and ends the op with its status. A disagreement
  // fails the op with FailedPrecondition on every rank, before any data moves. regardless: then
  // runs whatever the record says (refuse).
  void agree_then(OpKernelContext* ctx, DoneCallback done, const Comm& comm, std::shared_ptr<Record> rec,
                  std::function<absl::Status(const Record&, Later*)> then, bool regardless = false);
  // Enters the agreement with a record no valid call makes (the peers then raise the
  // disagreement instead of waiting), then fails the op with InvalidArgument(message).
  void refuse(OpKernelContext* ctx, DoneCallback done, const Comm& comm, Kind kind, const std::string& message);

  int64_t process_set_id_ = 0;
  std::string signature_;
  std::string what_;
};

}  // namespace gj_tf

#endif
