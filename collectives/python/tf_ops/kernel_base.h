// What every gj.tensorflow kernel shares: its attributes, its communicator, the agreement
// record exchanged and checked on the set's completion thread (worker.h), then the call's data
// calls there, and `done`.
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
// the library's NCCL calls are enqueued on (device.h).
struct Place {
  bool device = false;
  void* stream = nullptr;  // a cudaStream_t
};

// A library call's result as a Status: FailedPrecondition (Horovod's class) naming the call,
// the result and the library's last error for the communicator.
absl::Status checked(const Comm& comm, const char* call, gjResult_t rc);

class GjKernel : public AsyncOpKernel {
 public:
  explicit GjKernel(OpKernelConstruction* c);

 protected:
  // The set's communicator, or false after failing the op (done called).
  bool comm(OpKernelContext* ctx, const DoneCallback& done, Comm* out);
  // On comm's completion thread: exchanges rec (agreement.py's blocking record), and once
  // every rank's record agreed runs then(rec) (the data calls), and ends the op with its
  // status. A disagreement fails the op with FailedPrecondition on every rank, before any data
  // moves. regardless: then runs whatever the record says (refuse).
  //
  // Why the library's blocking calls on a thread of ours, not its nonblocking ones completed by
  // a waiting thread: a blocking call runs in its caller's thread when the communicator's queue
  // is idle (it always is here: the set's calls are made on this one thread), so an op costs one
  // thread handoff (executor -> completion thread) instead of three more (to the library's
  // progress thread and back, twice); on a loaded 2-core VM each handoff costs a scheduler
  // slice. The blocking forms are also exactly the Python path's wire (a rank inside join()
  // mirrors them), which a nonblocking allreduce is not (the queue may fuse it, agreeing first).
  void agree_then(OpKernelContext* ctx, DoneCallback done, const Comm& comm, std::shared_ptr<Record> rec,
                  std::function<absl::Status(const Record&)> then, bool regardless = false);
  // Enters the agreement with a record no valid call makes (the peers then raise the
  // disagreement instead of waiting), then fails the op with InvalidArgument(message).
  void refuse(OpKernelContext* ctx, DoneCallback done, const Comm& comm, Kind kind, const std::string& message);

  int64_t process_set_id_ = 0;
  std::string signature_;
  std::string what_;
};

}  // namespace gj_tf

#endif
