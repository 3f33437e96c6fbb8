// The agreement record of gj/common/agreement.py, built and checked in C++ so that a compiled op
// agrees with its peers the way the Python path does, on the same wire: one int64 MAX allreduce
// of HEADER + size values over the set, carrying (h, -h) of the call's signature, its kind and
// the layout a rank inside join() mirrors (gj/tensorflow/_join.py reads it unchanged). Every
// rank of a job runs the same path (the ops or the numpy_function fallback), so h is a hash of
// the op's own signature text; ranks on different paths disagree loudly, never silently.
#ifndef GJ_TF_OPS_RECORD_H_
#define GJ_TF_OPS_RECORD_H_

#include <cstdint>
#include <string>
#include <vector>

namespace gj_tf {

// agreement.py's constants (its module docstring draws the record).
constexpr int64_t kNeutral = INT64_MIN;
constexpr int kInline = 8;
constexpr int kLayout = 11;
constexpr int kHeader = kLayout + kInline;
enum Field { kH = 0, kNegH, kKind, kNonblocking, kDtype, kOp, kPre, kPost, kRoot, kDevice, kLayoutLen };
enum Kind : int64_t { kAllreduce = 1, kGrouped, kBroadcast, kAllgather, kReducescatter, kAlltoall, kAdasum };

// What a rank inside join() needs to issue the call's data request(s) itself (agreement.Wire).
struct Wire {
  int64_t dtype = 0, op = 0, root = 0;
  double pre = 1.0, post = 1.0;
  bool device = false;  // the data is in GPU memory
  std::vector<int64_t> layout;
};

class Record {
 public:
  // signature: the call's fields as text (the hash's input and the disagreement's message).
  Record(int rank, int size, Kind kind, std::string signature, const Wire& wire, int64_t slot);

  int64_t* data() { return values_.data(); }
  size_t count() const { return values_.size(); }
  const Wire& wire() const { return wire_; }
  Kind kind() const { return kind_; }

  // After the allreduce: "" when every rank passed this signature and the call may run with the
  // ranks that joined, else the error text (Horovod's FailedPrecondition).
  std::string verdict(const std::string& what) const;
  // The set ranks inside join().
  std::vector<int> joined() const;
  int64_t slot(int r) const { return values_[kHeader + r]; }

 private:
  int rank_;
  Kind kind_;
  std::string signature_;
  int64_t h_;
  Wire wire_;
  std::vector<int64_t> values_;
};

}  // namespace gj_tf

#endif
