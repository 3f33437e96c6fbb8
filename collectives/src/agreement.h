// Cross-rank argument agreement: one small MPI_Allreduce tells every rank whether all ranks
// passed the same values, so a mismatch becomes gjInvalidUsage on every rank rather than a
// hang or silently wrong data. Every collective sends the same fixed record (Signature), so
// the k-th checked call of one rank always meets the k-th checked call of every other rank,
// whatever collectives they are: different kinds are caught like different counts.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

namespace gj {

// The collective a call is; numbered for the record, named for messages.
enum class Kind : std::uint64_t {
  AllReduce = 1,
  GroupedAllReduce = 2,
  Broadcast = 3,
  AllGather = 4,
  ReduceScatter = 5,
  Barrier = 6,
  Split = 7,
  SetCheck = 8,
  Destroy = 9,
  AllToAll = 10,
  Adasum = 11,
};
const char* kind_name(std::uint64_t kind);

// What every rank must pass alike. Fields a collective does not have stay 0.
struct Signature {
  Kind kind = Kind::AllReduce;
  std::uint64_t count = 0;        // elements (total elements for grouped / per-rank calls)
  std::uint64_t counts_hash = 0;  // per-tensor or per-rank count array (hash_counts)
  std::uint64_t dtype = 0;
  std::uint64_t op = 0;
  std::uint64_t root = 0;
  std::uint64_t ntensors = 0;
  std::uint64_t scale = 0;  // hash of prescale/postscale (hash_scale)
};

std::uint64_t hash_counts(const std::size_t* values, int n);
std::uint64_t hash_scale(double prescale, double postscale);

// Collective over comm. Throws gj::Error(gjInvalidUsage) naming call, the first field that
// differs and its smallest and largest values; gjMpiError when the check itself fails.
void require_same_on_all_ranks(MPI_Comm comm, const char* call, const Signature& sig);

// Collective over comm: whether every rank passed sig (no throw for a difference).
bool same_on_all_ranks(MPI_Comm comm, const char* call, const Signature& sig);

// Collective over comm: the smallest `offer` of any rank (how many queued requests every rank
// can fuse), with sig checked as require_same_on_all_ranks does when check is true, in the
// same one MPI_Allreduce. Every rank must pass the same check flag.
std::uint64_t agree_min(MPI_Comm comm, const char* call, const Signature& sig, bool check, std::uint64_t offer);

}  // namespace gj
