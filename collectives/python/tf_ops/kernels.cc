// The kernels of gj.tensorflow's collectives, CPU (kDevice false) and GPU (true): the tensors'
// own memory (no copy), the library's calls made on the set's completion thread
// (kernel_base.h), never on TensorFlow's executor thread. On the CPU each call has completed
// when `done` runs; on a GPU it is enqueued on TensorFlow's compute stream for the device
// (device.h: the library's device calls return once enqueued) and `done` follows at once, the
// consumer ordered after it on that stream. What each computes is gj/tensorflow/_host.py's
// function of the same name (the numpy_function fallback runs that one): the same records,
// layouts and library calls.
#include <cstring>
#include <vector>

#include "device.h"
#include "kernel_base.h"
#include "tensorflow/core/framework/op_requires.h"

namespace gj_tf {
namespace {

using tensorflow::DEVICE_CPU;
using tensorflow::DEVICE_GPU;
using tensorflow::OpInputList;
using tensorflow::OpOutputList;

template <bool kDevice>
Place place_of(OpKernelContext* ctx) {
  return kDevice ? device_place(ctx) : Place();
}

Wire wire_of(bool device) {
  Wire w;
  w.device = device;
  return w;
}

// A reduction's attributes: the library's op and the factors.
struct Reduction {
  explicit Reduction(OpKernelConstruction* c) {
    int64_t pre_bits = 0, post_bits = 0;
    OP_REQUIRES_OK(c, c->GetAttr("reduce_op", &op));
    OP_REQUIRES_OK(c, c->GetAttr("prescale", &pre_bits));
    OP_REQUIRES_OK(c, c->GetAttr("postscale", &post_bits));
    pre = from_bits(pre_bits);
    post = from_bits(post_bits);
  }
  int64_t op = 0;
  double pre = 1.0, post = 1.0;
};

template <bool kDevice>
class AllreduceOp : public GjKernel {
 public:
  explicit AllreduceOp(OpKernelConstruction* c) : GjKernel(c), r_(c) {}

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    Comm comm;
    if (!GjKernel::comm(ctx, done, &comm)) return;
    const Place place = place_of<kDevice>(ctx);
    const Tensor& in = ctx->input(0);
    Tensor* out = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->forward_input_or_allocate_output({0}, 0, in.shape(), &out), done);
    const int dtype = reduce_code(in.dtype());
    const size_t n = static_cast<size_t>(in.NumElements());
    Wire w = wire_of(kDevice);
    w.dtype = dtype;
    w.op = r_.op;
    w.pre = r_.pre;
    w.post = r_.post;
    w.layout = {static_cast<int64_t>(n)};
    auto rec = std::make_shared<Record>(comm.rank, comm.size, kAllreduce,
                                        signature_ + ", shape=" + shape_text(in.shape()), w, 0);
    const Reduction r = r_;
    agree_then(ctx, std::move(done), comm, rec, [comm, place, r, dtype, n, send = data_of(in), recv = data_of(*out)](
                                                      const Record&) {
      return checked(comm, "gjAllReduceScaled",
                     gjAllReduceScaled(send, recv, n, static_cast<gjDataType_t>(dtype), static_cast<gjRedOp_t>(r.op),
                                       r.pre, r.post, comm.handle, place.stream));
    });
  }

 private:
  Reduction r_;
};

template <bool kDevice>
class GroupedAllreduceOp : public GjKernel {
 public:
  explicit GroupedAllreduceOp(OpKernelConstruction* c) : GjKernel(c), r_(c) {}

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    Comm comm;
    if (!GjKernel::comm(ctx, done, &comm)) return;
    const Place place = place_of<kDevice>(ctx);
    OpInputList ins;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->input_list("tensors", &ins), done);
    // One library call per dtype, in the order the dtypes first appear (_host.grouped_allreduce).
    struct Group {
      int dtype;
      std::vector<const void*> sends;
      std::vector<void*> recvs;
      std::vector<size_t> counts;
    };
    auto groups = std::make_shared<std::vector<Group>>();
    std::string shapes;
    for (int i = 0; i < ins.size(); ++i) {
      const Tensor& in = ins[i];
      Tensor* out = nullptr;
      OP_REQUIRES_OK_ASYNC(ctx, ctx->forward_input_or_allocate_output({i}, i, in.shape(), &out), done);
      const int dtype = reduce_code(in.dtype());
      Group* g = nullptr;
      for (Group& e : *groups) {
        if (e.dtype == dtype) g = &e;
      }
      if (g == nullptr) {
        groups->push_back(Group{dtype, {}, {}, {}});
        g = &groups->back();
      }
      g->sends.push_back(data_of(in));
      g->recvs.push_back(data_of(*out));
      g->counts.push_back(static_cast<size_t>(in.NumElements()));
      shapes += (i ? ", " : "") + shape_text(in.shape());
    }
    Wire w = wire_of(kDevice);
    w.op = r_.op;
    w.pre = r_.pre;
    w.post = r_.post;
    for (const Group& g : *groups) {
      w.layout.push_back(g.dtype);
      w.layout.push_back(static_cast<int64_t>(g.counts.size()));
      for (size_t c : g.counts) w.layout.push_back(static_cast<int64_t>(c));
    }
    auto rec = std::make_shared<Record>(comm.rank, comm.size, kGrouped, signature_ + ", shapes=[" + shapes + "]",
                                        w, 0);
    const Reduction r = r_;
    agree_then(ctx, std::move(done), comm, rec, [comm, place, r, groups](const Record&) {
      for (const Group& g : *groups) {
        absl::Status s = checked(
            comm, "gjGroupedAllReduceScaled",
            gjGroupedAllReduceScaled(g.sends.data(), g.recvs.data(), g.counts.data(), static_cast<int>(g.counts.size()),
                                     static_cast<gjDataType_t>(g.dtype), static_cast<gjRedOp_t>(r.op), r.pre, r.post,
                                     comm.handle, place.stream));
        if (!s.ok()) return s;
      }
      return absl::OkStatus();
    });
  }

 private:
  Reduction r_;
};

// op=Adasum (host memory only, as the library's Adasum; mpi_ops.py scales before and after).
class AdasumOp : public GjKernel {
 public:
  using GjKernel::GjKernel;

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    Comm comm;
    if (!GjKernel::comm(ctx, done, &comm)) return;
    const Tensor& in = ctx->input(0);
    Tensor* out = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_output(0, in.shape(), &out), done);
    const int dtype = reduce_code(in.dtype());
    const size_t n = static_cast<size_t>(in.NumElements());
    Wire w;
    w.dtype = dtype;
    w.layout = {static_cast<int64_t>(n)};
    auto rec = std::make_shared<Record>(comm.rank, comm.size, kAdasum,
                                        signature_ + ", shape=" + shape_text(in.shape()), w, 0);
    agree_then(ctx, std::move(done), comm, rec, [comm, dtype, n, send = data_of(in), recv = data_of(*out)](
                                                      const Record&) {
      return checked(comm, "gjAllReduceAdasum",
                     gjAllReduceAdasum(send, recv, n, static_cast<gjDataType_t>(dtype), comm.handle));
    });
  }
};

// Bytes of one row (everything after dimension 0).
int64_t row_bytes(const Tensor& t) {
  int64_t row = 1;
  for (int i = 1; i < t.dims(); ++i) row *= t.dim_size(i);
  return row * static_cast<int64_t>(tensorflow::DataTypeSize(t.dtype()));
}

TensorShape with_rows(const TensorShape& s, int64_t rows) {
  TensorShape out = s;
  out.set_dim(0, rows);
  return out;
}

template <bool kDevice>
class AllgatherOp : public GjKernel {
 public:
  using GjKernel::GjKernel;

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    Comm comm;
    if (!GjKernel::comm(ctx, done, &comm)) return;
    const Place place = place_of<kDevice>(ctx);
    const Tensor* in = &ctx->input(0);
    OP_REQUIRES_ASYNC(ctx, in->dims() > 0,
                      absl::InvalidArgumentError(what_ + ": tensor is a scalar (shape ()); it needs a first dimension "
                                                         "to concatenate on (reshape it to [1])"),
                      done);
    TensorShape row_shape = in->shape();
    row_shape.RemoveDim(0);
    auto rec = std::make_shared<Record>(comm.rank, comm.size, kAllgather,
                                        signature_ + ", row_shape=" + shape_text(row_shape), wire_of(kDevice),
                                        in->dim_size(0));
    agree_then(ctx, std::move(done), comm, rec, [ctx, comm, place, in](const Record& agreed) {
      std::vector<size_t> counts(static_cast<size_t>(comm.size));
      int64_t rows = 0;
      const int64_t row = row_bytes(*in);
      for (int r = 0; r < comm.size; ++r) {
        rows += agreed.slot(r);
        counts[static_cast<size_t>(r)] = static_cast<size_t>(agreed.slot(r) * row);
      }
      Tensor* out = nullptr;
      TF_RETURN_IF_ERROR(ctx->allocate_output(0, with_rows(in->shape(), rows), &out));
      return checked(comm, "gjAllGatherV",
                     gjAllGatherV(data_of(*in), data_of(*out), counts.data(), gjUint8, comm.handle, place.stream));
    });
  }
};

template <bool kDevice>
class BroadcastOp : public GjKernel {
 public:
  explicit BroadcastOp(OpKernelConstruction* c) : GjKernel(c) { OP_REQUIRES_OK(c, c->GetAttr("root", &root_)); }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    Comm comm;
    if (!GjKernel::comm(ctx, done, &comm)) return;
    const Place place = place_of<kDevice>(ctx);
    const Tensor& in = ctx->input(0);
    Tensor* out = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->forward_input_or_allocate_output({0}, 0, in.shape(), &out), done);
    const size_t bytes = in.TotalBytes();
    // Only the root's buffer needs the input; the others are written whole by the broadcast.
    if (comm.rank == root_ && data_of(*out) != data_of(in) && bytes > 0) {
      if (kDevice) {
        OP_REQUIRES_OK_ASYNC(ctx, device_copy(ctx, data_of(*out), data_of(in), bytes), done);
      } else {
        std::memcpy(data_of(*out), data_of(in), bytes);
      }
    }
    Wire w = wire_of(kDevice);
    w.dtype = gjUint8;
    w.root = root_;
    w.layout = {static_cast<int64_t>(bytes)};
    auto rec = std::make_shared<Record>(comm.rank, comm.size, kBroadcast,
                                        signature_ + ", shape=" + shape_text(in.shape()), w, 0);
    const int root = static_cast<int>(root_);
    agree_then(ctx, std::move(done), comm, rec, [comm, place, root, bytes, buf = data_of(*out)](const Record&) {
      return checked(comm, "gjBroadcast", gjBroadcast(buf, bytes, gjUint8, root, comm.handle, place.stream));
    });
  }

 private:
  int64_t root_ = 0;
};

template <bool kDevice>
class AlltoallOp : public GjKernel {
 public:
  using GjKernel::GjKernel;

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    Comm comm;
    if (!GjKernel::comm(ctx, done, &comm)) return;
    const Place place = place_of<kDevice>(ctx);
    const Tensor* in = &ctx->input(0);
    const Tensor& given = ctx->input(1);  // host memory on both devices
    OP_REQUIRES_ASYNC(ctx, in->dims() > 0,
                      absl::InvalidArgumentError(what_ + ": tensor is a scalar (shape ()); it needs a first dimension "
                                                         "to split (reshape it to [1])"),
                      done);
    const int64_t rows = in->dim_size(0);
    const int n = comm.size;
    auto splits = std::make_shared<std::vector<int64_t>>();
    if (given.NumElements() == 0) {
      if (rows % n != 0) {
        return refuse(ctx, std::move(done), comm, kAlltoall,
                      what_ + ": tensor's first dimension " + std::to_string(rows) + " does not divide among the " +
                          std::to_string(n) + " ranks of the set; pass splits=");
      }
      splits->assign(static_cast<size_t>(n), rows / n);
    } else {
      auto flat = given.flat<int32_t>();
      for (int64_t i = 0; i < flat.size(); ++i) splits->push_back(flat(i));
    }
    bool valid = static_cast<int>(splits->size()) == n;
    int64_t sum = 0;
    for (int64_t s : *splits) {
      valid = valid && s >= 0;
      sum += s;
    }
    if (!valid || sum != rows) {
      std::string text = "[";
      for (size_t i = 0; i < splits->size(); ++i) text += (i ? ", " : "") + std::to_string((*splits)[i]);
      return refuse(ctx, std::move(done), comm, kAlltoall,
                    what_ + ": splits=" + text + "] must have " + std::to_string(n) +
                        " non-negative entries summing to the first dimension " + std::to_string(rows));
    }
    TensorShape row_shape = in->shape();
    row_shape.RemoveDim(0);
    auto rec = std::make_shared<Record>(comm.rank, comm.size, kAlltoall,
                                        signature_ + ", row_shape=" + shape_text(row_shape), wire_of(kDevice), 0);
    agree_then(ctx, std::move(done), comm, rec, [ctx, comm, place, in, splits](const Record&) {
      const size_t n = static_cast<size_t>(comm.size);
      std::vector<int64_t> got(n);
      std::vector<size_t> ones(n, 1);
      // The counts are host memory on both devices (the output's size).
      absl::Status s = checked(comm, "gjAllToAllV",
                               gjAllToAllV(splits->data(), ones.data(), got.data(), ones.data(), gjInt64, comm.handle,
                                           nullptr));
      if (!s.ok()) return s;
      const int64_t row = row_bytes(*in);
      std::vector<size_t> send_bytes(n), recv_bytes(n);
      int64_t rows = 0;
      for (size_t r = 0; r < n; ++r) {
        send_bytes[r] = static_cast<size_t>((*splits)[r] * row);
        recv_bytes[r] = static_cast<size_t>(got[r] * row);
        rows += got[r];
      }
      Tensor* out = nullptr;
      Tensor* received = nullptr;
      TF_RETURN_IF_ERROR(ctx->allocate_output(0, with_rows(in->shape(), rows), &out));
      TF_RETURN_IF_ERROR(ctx->allocate_output(1, TensorShape({static_cast<int64_t>(n)}), &received));
      auto r32 = received->flat<int32_t>();
      for (size_t r = 0; r < n; ++r) r32(static_cast<int64_t>(r)) = static_cast<int32_t>(got[r]);
      return checked(comm, "gjAllToAllV",
                     gjAllToAllV(data_of(*in), send_bytes.data(), data_of(*out), recv_bytes.data(), gjUint8,
                                 comm.handle, place.stream));
    });
  }
};

// Horovod's split of rows over n ranks: the first rows % n ranks one more.
std::vector<int64_t> scatter_rows(int64_t rows, int n) {
  std::vector<int64_t> out(static_cast<size_t>(n), rows / n);
  for (int r = 0; r < rows % n; ++r) ++out[static_cast<size_t>(r)];
  return out;
}

template <bool kDevice>
class ReducescatterOp : public GjKernel {
 public:
  explicit ReducescatterOp(OpKernelConstruction* c) : GjKernel(c), r_(c) {}

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    Comm comm;
    if (!GjKernel::comm(ctx, done, &comm)) return;
    const Place place = place_of<kDevice>(ctx);
    OpInputList ins;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->input_list("tensors", &ins), done);
    struct Call {
      const void* send;
      void* recv;
      int dtype;
      std::vector<size_t> counts;
    };
    auto calls = std::make_shared<std::vector<Call>>();
    OpOutputList outs;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->output_list("outs", &outs), done);
    std::string shapes;
    for (int i = 0; i < ins.size(); ++i) {
      const Tensor& in = ins[i];
      OP_REQUIRES_ASYNC(ctx, in.dims() > 0,
                        absl::InvalidArgumentError(what_ + ": tensors[" + std::to_string(i) +
                                                   "] is a scalar (shape ()); it needs a first dimension to scatter"),
                        done);
      const std::vector<int64_t> shares = scatter_rows(in.dim_size(0), comm.size);
      const int64_t row = in.dim_size(0) == 0 ? 0 : in.NumElements() / in.dim_size(0);
      Tensor* out = nullptr;
      OP_REQUIRES_OK_ASYNC(ctx, outs.allocate(i, with_rows(in.shape(), shares[static_cast<size_t>(comm.rank)]), &out),
                           done);
      Call call{data_of(in), data_of(*out), reduce_code(in.dtype()), {}};
      for (int64_t s : shares) call.counts.push_back(static_cast<size_t>(s * row));
      calls->push_back(std::move(call));
      shapes += (i ? ", " : "") + shape_text(in.shape());
    }
    auto rec = std::make_shared<Record>(comm.rank, comm.size, kReducescatter,
                                        signature_ + ", shapes=[" + shapes + "]", wire_of(kDevice), 0);
    const Reduction r = r_;
    agree_then(ctx, std::move(done), comm, rec, [comm, place, r, calls](const Record&) {
      for (const Call& c : *calls) {
        absl::Status s = checked(comm, "gjReduceScatter",
                                 gjReduceScatter(c.send, c.recv, c.counts.data(), static_cast<gjDataType_t>(c.dtype),
                                                 static_cast<gjRedOp_t>(r.op), r.pre, r.post, comm.handle,
                                                 place.stream));
        if (!s.ok()) return s;
      }
      return absl::OkStatus();
    });
  }

 private:
  Reduction r_;
};

#define GJ_REGISTER(NAME, KERNEL)                                              \
  REGISTER_KERNEL_BUILDER(Name(NAME).Device(DEVICE_CPU), KERNEL<false>); \
  REGISTER_KERNEL_BUILDER(Name(NAME).Device(DEVICE_GPU), KERNEL<true>)

GJ_REGISTER("GjAllreduce", AllreduceOp);
GJ_REGISTER("GjGroupedAllreduce", GroupedAllreduceOp);
GJ_REGISTER("GjAllgather", AllgatherOp);
GJ_REGISTER("GjBroadcast", BroadcastOp);
GJ_REGISTER("GjReducescatter", ReducescatterOp);
REGISTER_KERNEL_BUILDER(Name("GjAdasum").Device(DEVICE_CPU), AdasumOp);
REGISTER_KERNEL_BUILDER(Name("GjAlltoall").Device(DEVICE_CPU), AlltoallOp<false>);
REGISTER_KERNEL_BUILDER(Name("GjAlltoall").Device(DEVICE_GPU).HostMemory("splits").HostMemory("received_splits"),
                        AlltoallOp<true>);

}  // namespace
}  // namespace gj_tf
