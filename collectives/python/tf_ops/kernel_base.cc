#include "kernel_base.h"

#include <cstring>

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

absl::Status checked(const Comm& comm, const char* call, gjResult_t rc) {
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
                          std::function<absl::Status(const Record&)> then, bool regardless) {
  const std::string what = what_;
  post(comm.handle, [ctx, done = std::move(done), comm, rec, what, then = std::move(then), regardless] {
    // agreement.agree(): the record with the library's check off (the record is the check), one
    // plain allreduce; the data calls after it run unchecked too, as the Python path's do.
    gjCommSetCheck(comm.handle, 0);
    const gjResult_t rc = gjAllReduce(rec->data(), rec->data(), rec->count(), gjInt64, gjMax, comm.handle, nullptr);
    absl::Status s;
    if (regardless) {
      s = then(*rec);
    } else if (rc != gjSuccess) {
      s = absl::FailedPreconditionError(library_error(what.c_str(), rc, comm.handle));
    } else {
      const std::string verdict = rec->verdict(what);
      s = verdict.empty() ? layout_record(comm, *rec) : absl::FailedPreconditionError(verdict);
      if (s.ok()) s = then(*rec);
    }
    if (!s.ok()) ctx->SetStatus(s);
    done();
  });
}

void GjKernel::refuse(OpKernelContext* ctx, DoneCallback done, const Comm& comm, Kind kind,
                      const std::string& message) {
  auto rec = std::make_shared<Record>(comm.rank, comm.size, kind, "call=" + what_ + ", invalid arguments=True",
                                      Wire{}, 0);
  agree_then(ctx, std::move(done), comm, rec,
             [message](const Record&) { return absl::InvalidArgumentError(message); }, true);
}

}  // namespace gj_tf
