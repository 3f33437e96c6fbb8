// A POSIX shared-memory segment mapped by every rank of a communicator (the only code in
// the shm path that touches the OS besides the waits).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>

namespace gj::shm {

class Segment {
 public:
  // Collective over comm. Rank 0 creates a segment under a fresh unique name, reserves its
  // pages (so a too-small /dev/shm fails here, not with SIGBUS later), and broadcasts the
  // name and a random token; the others open and map it and check the token (ranks that
  // only look local, e.g. pods sharing a hostname, fail here). The name is unlinked once
  // every rank has mapped it, so nothing is left behind whatever happens next.
  // Returns nullptr on every rank if any rank failed, with that rank's reason in why_not.
  static std::unique_ptr<Segment> map_shared(MPI_Comm comm, std::size_t bytes, std::string* why_not);

  Segment(void* base, std::size_t bytes) : base_(base), bytes_(bytes) {}
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  unsigned char* base() const { return static_cast<unsigned char*>(base_); }
  std::size_t size() const { return bytes_; }

 private:
  void* base_;
  std::size_t bytes_;
};

}  // namespace gj::shm
