#include "agreement.h"

#include <cstring>
#include <string>

#include "error.h"
#include "mpi_base/mpi_check.h"
#include "mpi_base/mpi_wait.h"

namespace gj {
namespace {

constexpr int kFields = 8;
constexpr const char* kFieldNames[kFields] = {"collective", "count", "counts[]", "dtype",
                                              "op", "root", "ntensors", "prescale/postscale"};

void to_fields(const Signature& s, std::uint64_t* f) {
  f[0] = static_cast<std::uint64_t>(s.kind);
  f[1] = s.count;
  f[2] = s.counts_hash;
  f[3] = s.dtype;
  f[4] = s.op;
  f[5] = s.root;
  f[6] = s.ntensors;
  f[7] = s.scale;
}

std::string value_text(int field, std::uint64_t v) {
  if (field == 0) return kind_name(v);
  return std::to_string(v);
}

// v holds (x, ~x) per field after an MPI_MIN reduction: min(x) and ~max(x).
void throw_on_difference(const char* call, const std::uint64_t* v) {
  for (int i = 0; i < kFields; ++i) {
    const std::uint64_t lo = v[2 * i];
    const std::uint64_t hi = ~v[2 * i + 1];
    if (lo == hi) continue;
    if (i == 2 || i == 7) {  // hashes: their values mean nothing to a reader
      throw Error(gjInvalidUsage, std::string(call) + ": ranks passed different " + kFieldNames[i] +
                                      "; every rank must pass the same values");
    }
    throw Error(gjInvalidUsage, std::string(call) + ": ranks passed different " + kFieldNames[i] + " (smallest " +
                                    value_text(i, lo) + ", largest " + value_text(i, hi) +
                                    "); every rank must pass the same value");
  }
}

}  // namespace

const char* kind_name(std::uint64_t kind) {
  switch (static_cast<Kind>(kind)) {
    case Kind::AllReduce: return "allreduce";
    case Kind::GroupedAllReduce: return "grouped allreduce";
    case Kind::Broadcast: return "broadcast";
    case Kind::AllGather: return "allgather";
    case Kind::ReduceScatter: return "reduce-scatter";
    case Kind::Barrier: return "barrier";
    case Kind::Split: return "comm split";
    case Kind::SetCheck: return "set check";
    case Kind::Destroy: return "comm destroy";
    case Kind::AllToAll: return "alltoall";
    case Kind::Adasum: return "adasum allreduce";
  }
  return "unknown";
}

std::uint64_t hash_counts(const std::size_t* values, int n) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the 8 bytes of each value
  for (int i = 0; i < n; ++i) {
    std::uint64_t v = values[i];
    for (int b = 0; b < 8; ++b) {
      h = (h ^ (v & 0xff)) * 1099511628211ull;
      v >>= 8;
    }
  }
  return h;
}

std::uint64_t hash_scale(double prescale, double postscale) {
  if (prescale == 1.0 && postscale == 1.0) return 0;  // the common case, on every call
  std::size_t bits[2];
  static_assert(sizeof(double) == sizeof(std::size_t), "64-bit doubles and size_t");
  std::memcpy(&bits[0], &prescale, 8);
  std::memcpy(&bits[1], &postscale, 8);
  return hash_counts(bits, 2);
}

bool same_on_all_ranks(MPI_Comm comm, const char* call, const Signature& sig) {
  try {
    agree_min(comm, call, sig, true, 0);
    return true;
  } catch (const Error& e) {
    if (e.code() == gjInvalidUsage) return false;
    throw;
  }
}

void require_same_on_all_ranks(MPI_Comm comm, const char* call, const Signature& sig) {
  agree_min(comm, call, sig, true, 0);
}

std::uint64_t agree_min(MPI_Comm comm, const char* call, const Signature& sig, bool check, std::uint64_t offer) {
  std::uint64_t v[2 * kFields + 1];
  int n = 1;
  if (check) {
    std::uint64_t f[kFields];
    to_fields(sig, f);
    for (int i = 0; i < kFields; ++i) {
      v[2 * i] = f[i];
      v[2 * i + 1] = ~f[i];
    }
    n = 2 * kFields + 1;
  }
  v[n - 1] = offer;
  run_polled([&](MPI_Request* r) { return MPI_Iallreduce(MPI_IN_PLACE, v, n, MPI_UINT64_T, MPI_MIN, comm, r); },
             [&] { return std::string(call) + ": MPI_Iallreduce(argument check)"; });
  if (check) throw_on_difference(call, v);
  return v[n - 1];
}

}  // namespace gj
