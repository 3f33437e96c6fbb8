#include "record.h"

#include <cstring>

namespace gj_tf {
namespace {

// FNV-1a, kept below 2^62 so that h and -h are both int64 (agreement.py's rule).
int64_t digest(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return static_cast<int64_t>(h >> 2);
}

int64_t bits(double x) {
  int64_t out;
  std::memcpy(&out, &x, sizeof out);
  return out;
}

const char* kind_name(Kind k) {
  switch (k) {
    case kAllreduce: return "allreduce";
    case kGrouped: return "grouped_allreduce";
    case kBroadcast: return "broadcast";
    case kAllgather: return "allgather";
    case kReducescatter: return "reducescatter";
    case kAlltoall: return "alltoall";
    case kAdasum: return "allreduce(op=Adasum)";
  }
  return "this collective";
}

}  // namespace

Record::Record(int rank, int size, Kind kind, std::string signature, const Wire& wire, int64_t slot)
    : rank_(rank), kind_(kind), signature_(std::move(signature)), h_(digest(signature_)), wire_(wire) {
  values_.assign(static_cast<size_t>(kHeader + size), 0);
  int64_t* v = values_.data();
  v[kH] = h_;
  v[kNegH] = -h_;
  v[kKind] = kind;
  v[kNonblocking] = 0;  // the blocking call's record: a joined rank mirrors it as one
  v[kDtype] = wire.dtype;
  v[kOp] = wire.op;
  v[kPre] = bits(wire.pre);
  v[kPost] = bits(wire.post);
  v[kRoot] = wire.root;
  v[kDevice] = wire.device ? 1 : 0;
  v[kLayoutLen] = static_cast<int64_t>(wire.layout.size());
  if (wire.layout.size() <= static_cast<size_t>(kInline)) {
    for (size_t i = 0; i < wire.layout.size(); ++i) v[kLayout + i] = wire.layout[i];
  }
  for (int r = 0; r < size; ++r) v[kHeader + r] = kNeutral;
  v[kHeader + rank] = slot;
}

std::vector<int> Record::joined() const {
  std::vector<int> out;
  for (size_t r = kHeader; r < values_.size(); ++r) {
    if (values_[r] < 0) out.push_back(static_cast<int>(r - kHeader));
  }
  return out;
}

std::string Record::verdict(const std::string& what) const {
  if (values_[kH] != h_ || values_[kNegH] != -h_) {
    return what + " failed: the ranks of the process set disagree on the call's arguments; this rank (rank " +
           std::to_string(rank_) + " of the set) passed " + signature_ +
           ". Every rank must issue the same collectives in the same order with matching tensors.";
  }
  const std::vector<int> j = joined();
  if (!j.empty() && kind_ != kAllreduce && kind_ != kGrouped) {
    std::string ranks;
    for (int r : j) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    return what + " failed: " + kind_name(kind_) + " is not supported while rank(s) " + ranks +
           " of the set have called join() (as in Horovod: with joined ranks only allreduce, grouped allreduce, "
           "barrier and DistributedOptimizer steps run, the joined ranks contributing zeros); issue it before "
           "join(), or after every rank has joined";
  }
  return "";
}

}  // namespace gj_tf
