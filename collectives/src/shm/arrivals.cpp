#include "shm/arrivals.h"

#include <utility>

#include "mpi_base/mpi_check.h"

namespace gj::shm {
namespace {

constexpr std::size_t kLine = 128;  // one counter per 128 bytes: no false sharing
static_assert(sizeof(StageWord) <= kLine, "a stage word fits its line");

}  // namespace

std::unique_ptr<Arrivals> Arrivals::create(MPI_Comm comm, long timeout_ms, std::string* why_not) {
  int rank = 0, size = 0, local_size = 0;
  mpi_check(MPI_Comm_rank(comm, &rank), "gj::shm::Arrivals::create: MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm, &size), "gj::shm::Arrivals::create: MPI_Comm_size");
  MPI_Comm local = MPI_COMM_NULL;
  mpi_check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local),
            "gj::shm::Arrivals::create: MPI_Comm_split_type");
  mpi_check(MPI_Comm_size(local, &local_size), "gj::shm::Arrivals::create: MPI_Comm_size");
  mpi_check(MPI_Comm_free(&local), "gj::shm::Arrivals::create: MPI_Comm_free");
  if (local_size != size) {  // the same answer on every rank
    if (why_not != nullptr) *why_not = "ranks span nodes";
    return nullptr;
  }
  auto segment = Segment::map_shared(comm, kLine * static_cast<std::size_t>(size), why_not);
  if (!segment) return nullptr;
  return std::make_unique<Arrivals>(std::move(segment), rank, size, timeout_ms);
}

Arrivals::Arrivals(std::unique_ptr<Segment> segment, int rank, int size, long timeout_ms)
    : seg_(std::move(segment)), rank_(rank), size_(size), policy_(policy_for(timeout_ms, WaitMode::Sleep)) {}

StageWord& Arrivals::word(int q) const { return *reinterpret_cast<StageWord*>(seg_->base() + kLine * q); }

std::uint64_t Arrivals::arrive() {
  publish(word(rank_), ++arrived_, policy_);
  return arrived_;
}

void Arrivals::wait_for_peers(std::uint64_t n) const {
  for (int q = 0; q < size_; ++q) {
    if (q != rank_) wait_at_least(word(q), n, policy_, rank_, q);
  }
}

}  // namespace gj::shm
