#include "kernel_base.h"

#include <cstring>

#include "tensorflow/core/platform/logging.h"
#include "worker.h"

namespace gj_tf {

int reduce_code(tensorflow::DataType t) {
  switch (t) {
    case tensorflow::DT_FLOAT: return gjFloat32;
    case tensorflow::DT_DOUBLE: return gjFloat64;
    case tensorflow::DT_HALF: return gjFloat16;
    case tensorflow::DT_BFLOAT16: return gjBfloat16;
    case tensorflow::DT_INT32: return gjInt32;
    case tensorflow::DT_INT64: return gjInt64;
    case tensorflow::DT_UINT8: return gjUint8;
    default: return -1;
  }
}

std::string shape_text(const TensorShape& s) {
  std::string out = "(";
  for (int i = 0; i < s.dims(); ++i) out += (i ? ", " : "") + std::to_string(s.dim_size(i));
  return out + (s.dims() == 1 ? ",)" : ")");
}

double from_bits(int64_t bits) {
  double out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

void* data_of(const Tensor& t) {
  return t.NumElements() == 0 ? nullptr : const_cast<char*>(t.tensor_data().data());
}

absl::Status run(const Comm& comm, const char* call, const std::function<gjResult_t(gjRequest_t*)>& issue,
                 const Place& place, Later* later) {
  gjRequest_t request = nullptr;
  gjResult_t rc = issue(&request);
  if (rc == gjSuccess && place.device && later != nullptr) {
    later->push_back(request);
    return absl::OkStatus();
  }
  if (rc == gjSuccess) rc = gjWait(request);
  if (rc != gjSuccess) return absl::FailedPreconditionError(library_error(call, rc, comm.handle));
  return absl::OkStatus();
}

GjKernel::GjKernel(OpKernelConstruction* c) : AsyncOpKernel(c) {
  OP_REQUIRES_OK(c, c->GetAttr("process_set_id", &process_set_id_));
  OP_REQUIRES_OK(c, c->GetAttr("signature", &signature_));
  OP_REQUIRES_OK(c, c->GetAttr("what", &what_));
}

bool GjKernel::comm(OpKernelContext* ctx, const DoneCallback& done, Comm* out) {
  std::string why;
  if (comm_of(process_set_id_, out, &why)) return true;
  ctx->SetStatus(absl::FailedPreconditionError(what_ + ": " + why));
  done();
  return false;
}

namespace {

// The layout record a rank inside join() reads when the layout is longer than the record holds
// (agreement.layout_record: blocking, with the library's check on, as the joined rank issues it).
absl::Status layout_record(const Comm& comm, const Record& rec) {
  const std::vector<int64_t>& layout = rec.wire().layout;
  if (rec.joined().empty() || layout.size() <= static_cast<size_t>(kInline)) return absl::OkStatus();
  std::vector<int64_t> vec(layout);
  gjCommSetCheck(comm.handle, 1);
  const gjResult_t rc = gjAllReduce(vec.data(), vec.data(), vec.size(), gjInt64, gjMax, comm.handle, nullptr);
  gjCommSetCheck(comm.handle, 0);
  if (rc != gjSuccess) return absl::FailedPreconditionError(library_error("gjAllReduce", rc, comm.handle));
  return absl::OkStatus();
}

}  // namespace

void GjKernel::agree_then(OpKernelContext* ctx, DoneCallback done, const Comm& comm, std::shared_ptr<Record> rec,
                          std::function<absl::Status(const Record&, Later*)> then, bool regardless) {
  // The record's wire form is agreement.py's blocking record: one allreduce, never fused (a
  // one-tensor grouped call is not fusible and, with the check off, runs nothing before it).
  gjCommSetCheck(comm.handle, 0);
  const void* send = rec->data();
  void* recv = rec->data();
  const size_t count = rec->count();
  gjRequest_t request = nullptr;
  const gjResult_t rc =
      gjIgroupedAllReduce(&send, &recv, &count, 1, gjInt64, gjMax, 1.0, 1.0, comm.handle, nullptr, &request);
  if (rc != gjSuccess) {
    ctx->SetStatus(absl::FailedPreconditionError(library_error("gjIgroupedAllReduce", rc, comm.handle)));
    done();
    return;
  }
  const std::string what = what_;
  post(comm.handle, [ctx, done = std::move(done), comm, rec, request, what, then = std::move(then), regardless] {
    absl::Status s;
    Later later;
    const gjResult_t waited = gjWait(request);
    if (regardless) {
      s = then(*rec, &later);
    } else if (waited != gjSuccess) {
      s = absl::FailedPreconditionError(library_error(what.c_str(), waited, comm.handle));
    } else {
      const std::string verdict = rec->verdict(what);
      if (!verdict.empty()) {
        s = absl::FailedPreconditionError(verdict);
      } else {
        s = layout_record(comm, *rec);
        if (s.ok()) s = then(*rec, &later);
      }
    }
    if (!s.ok()) ctx->SetStatus(s);
    done();  // ctx is gone from here on
    for (gjRequest_t q : later) {
      const gjResult_t rc = gjWait(q);
      if (rc != gjSuccess) {
        // The op has ended; the communicator's device path now refuses every later call with
        // this cause (collectives.h), so the next op fails with it.
        LOG(ERROR) << library_error(what.c_str(), rc, comm.handle);
      }
    }
  });
}

void GjKernel::refuse(OpKernelContext* ctx, DoneCallback done, const Comm& comm, Kind kind,
                      const std::string& message) {
  auto rec = std::make_shared<Record>(comm.rank, comm.size, kind, "call=" + what_ + ", invalid arguments=True",
                                      Wire{}, 0);
  agree_then(ctx, std::move(done), comm, rec,
             [message](const Record&, Later*) { return absl::InvalidArgumentError(message); }, true);
}

}  // namespace gj_tf
